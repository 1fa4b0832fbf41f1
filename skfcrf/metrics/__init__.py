"""skfcrf.metrics."""
