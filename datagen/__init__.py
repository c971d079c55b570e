"""Synthetic test and benchmark data (Pile-format input files, small datasets) and the built-in
sample (``datagen.sample``).

Used by ``tests/``, ``bench/`` and ``python -m pipeline.run`` without ``--input``, from a checkout
of the repository; not part of the installed package, so Beam workers never import it.
"""
