"""Benchmarks: each prints its figures and a ratio against a floor measured in the same run."""
