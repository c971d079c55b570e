"""The permutation of ``--shuffle=global``: ``schemas.permutation``, which the trainer's
``--order=global`` reads with too (one definition for writer and reader)."""

from schemas.permutation import ALGORITHM, ROUNDS, Permutation

__all__ = ["ALGORITHM", "ROUNDS", "Permutation"]
