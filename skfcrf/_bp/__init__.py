"""Compiled kernels: inference (chain, TRP, exact), features, training objectives."""
