"""Plumbing every package may import: storage I/O, typed errors, flags from dataclasses, CLI.

The bottom of the import order: ``common`` <- ``schemas`` <- ``tokenizer`` <- ``pipeline``, and
``common``, ``schemas`` <- ``trainer``. Nothing here imports another pilepack package.
"""
