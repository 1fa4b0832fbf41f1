"""skfcrf.datasets."""
