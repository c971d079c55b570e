"""The manifest's sections of the formats beyond TFRecord (``--formats``, docs/formats.md)."""

from __future__ import annotations

from collections.abc import Sequence

from schemas.formats import MEGATRON
from schemas.megatron_index import document_dtype


def megatron_section(pairs: Sequence, *, formats: Sequence[str], vocab_size: int) -> dict:
    """``{"megatron": ...}`` with ``--formats=...,megatron`` (its pairs, ``PairInfo``, in
    order), else nothing."""
    if MEGATRON not in formats:
        return {}
    pairs = sorted(pairs, key=lambda p: p.prefix)
    return {"megatron": {"dtype": document_dtype(vocab_size), "eod": "eos",
                         "documents": sum(p.documents for p in pairs),
                         "tokens": sum(p.tokens for p in pairs),
                         "files": [p.to_json() for p in pairs]}}


def pairs_problem(pairs: Sequence, *, copies: int, formats: Sequence[str]) -> str | None:
    """What is wrong when ``--formats=...,megatron`` asked for pairs and they do not hold every
    document copy the part files hold (each exactly once: none lost, none reported twice, and
    pairs whenever documents were written); None otherwise."""
    paired = sum(pair.documents for pair in pairs)
    if MEGATRON not in formats or paired == copies:
        return None
    return (f"the part files hold {copies:,} documents, but the {len(pairs)} Megatron pairs "
            f"reported {paired:,}: a pair was lost or reported twice")
