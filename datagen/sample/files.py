"""What a built-in sample directory holds: its file names, its line format, its info file.

The files have the Pile's *format*: zstd-compressed JSON Lines, one document per line,
serialized the way the Pile's writer (lm_dataformat) does it::

    {"text": "...", "meta": {"pile_set_name": "Github"}}

that is ``json.dumps(record)`` with its defaults (``", "``/``": "`` separators,
``ensure_ascii=True``) plus ``"\\n"`` (:func:`pile_line`). A sample directory holds
``train-00.jsonl.zst``, ``train-01.jsonl.zst``, ... (:func:`train_filename`), the held-out
``val.jsonl.zst``, and ``sample_info.json``, written last, listing every file with its counts
(:class:`SampleFiles`); a directory without it is not a finished sample.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping

from common.errors import InputError
from datagen.pile_files import encode_lines, pile_doc

# Bump whenever a change to datagen.sample (or the writers of datagen.pile_files it uses)
# changes the files' bytes: the cache directory's name hashes this version, not the code.
SAMPLE_FORMAT_VERSION = 1
INFO_FILENAME = "sample_info.json"
VAL_FILENAME = "val.jsonl.zst"


def train_filename(index: int) -> str:
    """``train-00.jsonl.zst`` for ``index`` 0."""
    return f"train-{index:02d}.jsonl.zst"


def pile_line(*, text: str, subset: str) -> bytes:
    """One Pile JSON Lines record, byte for byte as lm_dataformat writes it (the encoding of
    ``datagen.pile_files``, which writes the files).

    >>> pile_line(text="héllo", subset="Github")
    b'{"text": "h\\\\u00e9llo", "meta": {"pile_set_name": "Github"}}\\n'
    """
    [line] = encode_lines([pile_doc(text, subset)])
    return line


@dataclasses.dataclass(frozen=True)
class SampleFiles:
    """What ``datagen.sample.build`` wrote. File names are relative to ``out_dir``.

    Attributes:
        out_dir: Directory holding the files.
        train_files: Names of the training files, e.g. ``("train-00.jsonl.zst", ...)``.
        val_file: Name of the held-out file, ``"val.jsonl.zst"``.
        doc_counts: Documents per file name.
        file_bytes: Compressed size per file name.
        subset_counts: Documents per subset (``pile_set_name``), all files together.
        file_subset_counts: Documents per file name, then per subset.
        subset_json_bytes: JSON Lines bytes (uncompressed, newlines included) per subset.
        json_bytes: JSON Lines bytes of all files together; at most the ``total_bytes`` asked.
    """

    out_dir: str
    train_files: tuple[str, ...]
    val_file: str
    doc_counts: Mapping[str, int]
    file_bytes: Mapping[str, int]
    subset_counts: Mapping[str, int]
    file_subset_counts: Mapping[str, Mapping[str, int]]
    subset_json_bytes: Mapping[str, int]
    json_bytes: int

    @property
    def train_paths(self) -> list[str]:
        """Paths of the training files (``out_dir`` joined with their names), a fresh list."""
        return [os.path.join(self.out_dir, name) for name in self.train_files]

    @property
    def val_path(self) -> str:
        """Path of the held-out file."""
        return os.path.join(self.out_dir, self.val_file)

    @property
    def compressed_bytes(self) -> int:
        """Total size of the compressed files."""
        return sum(self.file_bytes.values())

    @property
    def num_docs(self) -> int:
        """Documents in all files together."""
        return sum(self.doc_counts.values())

    def to_info(self) -> dict:
        """The ``sample_info.json`` content (file names only, so the directory can move)."""
        info = {"version": SAMPLE_FORMAT_VERSION}
        info.update(dataclasses.asdict(self))
        del info["out_dir"]
        info["train_files"] = list(self.train_files)
        return info

    @classmethod
    def from_info(cls, info: Mapping, *, out_dir: str, info_path: str) -> SampleFiles:
        """Rebuilds a :class:`SampleFiles` from :meth:`to_info`'s output.

        Raises:
            InputError: ``info`` has a version this module does not know (named with the file).
        """
        if info.get("version") != SAMPLE_FORMAT_VERSION:
            raise InputError(
                f"{info_path}: sample version {info.get('version')!r} is not "
                f"{SAMPLE_FORMAT_VERSION}; delete {out_dir} and rebuild it."
            )
        fields = {k: v for k, v in info.items() if k != "version"}
        fields["train_files"] = tuple(fields["train_files"])
        return cls(out_dir=out_dir, **fields)


def write_info(files: SampleFiles) -> None:
    """Writes ``sample_info.json`` atomically: the last step of a build, its commit point."""
    path = os.path.join(files.out_dir, INFO_FILENAME)
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(files.to_info(), f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def load_sample(out_dir: str) -> SampleFiles:
    """Reads a finished sample's ``sample_info.json``.

    Raises:
        FileNotFoundError: ``out_dir`` holds no ``sample_info.json`` (not a finished sample).
        InputError: The info file has an unknown version.
    """
    info_path = os.path.join(out_dir, INFO_FILENAME)
    with open(info_path, encoding="utf-8") as f:
        info = json.load(f)
    return SampleFiles.from_info(info, out_dir=out_dir, info_path=info_path)
