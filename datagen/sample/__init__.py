"""The built-in sample: a small Pile-format dataset built from text the Python installation ships.

``python -m pipeline.run`` without ``--input`` runs on it; tests and benchmarks use it too. It
lives here, in ``datagen/`` next to the other test-data generators, outside the installed
package: a checkout of the repository builds it (``python -m datagen.sample.cache``), a wheel or
a worker image does not need it. ``sources`` (where the text comes from), ``build`` (select,
split, write with ``datagen.pile_files``), ``files`` (what a sample directory holds) and
``cache`` (build once, reuse; the command).
"""
