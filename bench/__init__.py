"""Benchmarks (``make bench``); not part of the test suite."""
