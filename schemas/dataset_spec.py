"""The facts a split's writer and every reader must agree on, each with one owner.

=====================  ===================================  ==================================
fact                   owner in the manifest                derived or copied (checked on read)
=====================  ===================================  ==================================
sequence length        ``seq_len``                          record length ``seq_len + 1`` and
                                                            stride ``seq_len`` (derived, not
                                                            stored); ``features.*.shape``,
                                                            ``config.seq_len`` (copies)
vocabulary size        ``tokenizer.vocab_size``             token dtype (``uint16`` up to 65,536
                                                            pieces, else ``int32``): copied as
                                                            ``features.tokens.dtype``
segment features       ``features`` has ``segment_ids``     ``config.segment_ids`` (copy)
last partial record    ``packing.last_record``              ``config.last_record`` (copy)
=====================  ===================================  ==================================

``features`` stays in the manifest so a third-party reader needs nothing else to parse a record;
``DatasetSpec.from_manifest`` refuses a manifest whose copies disagree with their owner.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from schemas.errors import ManifestError
from schemas.records import (
    POSITIONS,
    SEGMENT_IDS,
    TOKENS,
    RecordSpec,
    index_dtype_for_seq_len,
    token_dtype_for_vocab,
)

LAST_RECORD_MODES = ("pad", "drop")


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """Record layout and packing of one split (see the module docstring for who owns what)."""

    seq_len: int
    vocab_size: int
    with_segments: bool = False
    last_record: str = "pad"

    def __post_init__(self):
        if self.last_record not in LAST_RECORD_MODES:
            raise ValueError(f"last_record must be one of {LAST_RECORD_MODES}, "
                             f"got {self.last_record!r}")
        token_dtype_for_vocab(self.vocab_size)  # raises for a vocabulary no dtype holds

    @property
    def token_dtype(self) -> str:
        return token_dtype_for_vocab(self.vocab_size)

    @property
    def record(self) -> RecordSpec:
        """What one TFRecord holds (the writer's and the parsers' spec)."""
        return RecordSpec(seq_len=self.seq_len, token_dtype=self.token_dtype,
                          with_segments=self.with_segments)

    def manifest_fields(self, *, chunk_bytes: int) -> dict:
        """The manifest's ``seq_len``, ``features`` and ``packing``, written from this spec."""
        return {
            "seq_len": self.seq_len,
            "features": self.record.to_manifest(),
            "packing": {"leading_eos": True, "last_record": self.last_record,
                        "chunk_bytes": chunk_bytes},
        }

    @classmethod
    def from_manifest(cls, doc: Mapping, *, source: str) -> "DatasetSpec":
        """The spec of a schema-valid manifest; ManifestError when a copy disagrees."""
        seq_len = doc["seq_len"]
        features = doc["features"]
        problems = []
        try:
            spec = cls(seq_len=seq_len, vocab_size=doc["tokenizer"]["vocab_size"],
                       with_segments=SEGMENT_IDS in features,
                       last_record=doc["packing"]["last_record"])
        except ValueError as err:
            raise ManifestError(f"{source}: {err}") from err
        unknown = set(features) - {TOKENS, SEGMENT_IDS, POSITIONS}
        if unknown:
            problems.append(f"unknown features {sorted(unknown)}")
        if (SEGMENT_IDS in features) != (POSITIONS in features):
            problems.append("features segment_ids and positions come together or not at all")
        for name, feature in features.items():
            if list(feature.get("shape", [])) != [seq_len + 1]:
                problems.append(f"features.{name}.shape is {feature.get('shape')}, but seq_len "
                                f"{seq_len} means [{seq_len + 1}]")
        want = {TOKENS: spec.token_dtype, SEGMENT_IDS: index_dtype_for_seq_len(seq_len),
                POSITIONS: index_dtype_for_seq_len(seq_len)}
        for name, feature in features.items():
            if name in want and feature.get("dtype") != want[name]:
                problems.append(f"features.{name}.dtype is {feature.get('dtype')!r}, but "
                                f"{name} of this dataset must be {want[name]!r}")
        config = doc.get("config") or {}
        for key, owner in (("seq_len", seq_len), ("segment_ids", spec.with_segments),
                           ("last_record", spec.last_record)):
            if key in config and config[key] != owner:
                problems.append(f"config.{key} is {config[key]!r}, the dataset has {owner!r}")
        if problems:
            raise ManifestError(f"{source}: inconsistent manifest: " + "; ".join(problems))
        return spec
