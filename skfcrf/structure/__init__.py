"""skfcrf.structure."""
