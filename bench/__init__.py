"""Benchmarks, each run from the repository root as ``python -m bench.NAME --help``.

Their figures and the commands that produced them are in BENCHMARKS.md.
"""
