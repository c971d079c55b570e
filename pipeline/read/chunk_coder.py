"""The Beam coder of the pipeline's large elements: raw, parsed, tokenized and packed chunks.

Beam's workers sample the size of elements passed between the fused steps of a stage, for
their counters, and size an element by encoding it: with the default (pickle) coder, most
chunks (the first ten of each step always) were pickled whole only to be measured, about
0.15 s of a 4-second run on the dev corpus. ``ChunkCoder`` still codes a chunk with Beam's
``PickleCoder`` to move it (the fan-out, multi-process workers), as Beam would, but takes its
size from the element's own ``approx_bytes()``. Each chunk class registers it for itself
(``register``), and its stage declares that output type.
"""

from __future__ import annotations

from typing import Any

from apache_beam import coders

# What Beam codes such elements with by default (its fallback for unknown types); only the
# size estimate differs.
_PICKLE = coders.PickleCoder()


class ChunkCoder(coders.Coder):
    """Beam's PickleCoder, sized by ``approx_bytes()``; not deterministic (never a key).
    Beam's default ``CoderImpl`` calls these three methods."""

    def encode(self, value) -> bytes:
        return _PICKLE.encode(value)

    def decode(self, encoded: bytes):
        return _PICKLE.decode(encoded)

    def estimate_size(self, value) -> int:
        return value.approx_bytes()

    def to_type_hint(self):
        return Any


def register(cls: type) -> type:
    """Class decorator: ``cls`` (with an ``approx_bytes()`` method) is coded by ChunkCoder."""
    coders.registry.register_coder(cls, ChunkCoder)
    return cls
