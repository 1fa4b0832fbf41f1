"""skfcrf.transformers."""
