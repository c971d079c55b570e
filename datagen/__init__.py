"""Synthetic test and benchmark data (Pile-format input files, small datasets).

Used by ``tests/`` and ``bench/`` alike; not part of the installed package.
"""
