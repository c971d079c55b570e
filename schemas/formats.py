"""The output formats of a dataset (``--formats``), and the names the manifest lists them by.

``tfrecord`` (packed records) is always written: the manifest's shards, its accounting of
records, ``pipeline.verify``, ``pipeline.roundtrip`` and the trainer are built on it; the other
formats are extra views of the same documents (docs/formats.md).
"""

from __future__ import annotations

TFRECORD = "tfrecord"
MEGATRON = "megatron"  # Megatron-Core's indexed dataset (schemas.megatron_index)
ARRAYRECORD = "arrayrecord"
FORMATS = (TFRECORD, MEGATRON, ARRAYRECORD)
DEFAULT_FORMATS = (TFRECORD,)


def formats_problem(formats: tuple[str, ...]) -> str | None:
    """None when ``formats`` is a valid ``--formats``; else what is wrong and the fix."""
    unknown = [name for name in formats if name not in FORMATS]
    if unknown:
        return (f"--formats: unknown format(s) {', '.join(map(repr, unknown))}; choose from "
                f"{', '.join(FORMATS)} (comma-separated, e.g. --formats=tfrecord,megatron)")
    if TFRECORD not in formats:
        return (f"--formats must include {TFRECORD} (the manifest, verify, roundtrip and the "
                f"trainer are built on its records), got {','.join(formats) or 'nothing'}; "
                f"e.g. --formats={TFRECORD},{','.join(formats)}")
    if len(set(formats)) != len(formats):
        return f"--formats names a format twice: {','.join(formats)}"
    return None
