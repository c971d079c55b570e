"""``--exclude_docs_from``: where the hashes of documents to remove come from.

Each source is either a dataset made by this pipeline (its ``manifest.json``, or the
directory holding it), whose ``doc_hashes`` files list the hashes of every document it
wrote, or raw Pile-format input (a file, glob or directory, as ``--input`` takes), whose
documents are read and hashed. Sources are resolved and checked before the run starts, so a
wrong path fails in seconds, not after the tokenizer is trained.
"""

from __future__ import annotations

import dataclasses

from common import storage
from common.errors import ConfigError
from pipeline.quality import doc_hash
from pipeline.read.inputs import InputFile, expand_inputs
from schemas import manifest as manifest_schema


@dataclasses.dataclass(frozen=True)
class ExclusionSources:
    hash_files: tuple[str, ...] = ()  # doc_hashes files of other splits (full paths)
    raw_files: tuple[InputFile, ...] = ()  # raw input to read and hash

    def __bool__(self) -> bool:
        return bool(self.hash_files or self.raw_files)


def manifest_path(source: str) -> str | None:
    """The manifest a source names, or None when it is raw input."""
    if source.endswith(manifest_schema.MANIFEST_NAME):
        return source
    fs, stripped = storage.filesystem(source)
    candidate = storage.join(source, manifest_schema.MANIFEST_NAME)
    if fs.isdir(stripped) and fs.exists(storage.filesystem(candidate)[1]):
        return candidate
    return None


def hash_files_of(manifest_path: str) -> list[str]:
    """The doc_hashes files a split's manifest lists, checked to be present and whole."""
    dataset = manifest_schema.load(manifest_path, check_files=False)
    entry = dataset.doc.get("doc_hashes")
    where = f"--exclude_docs_from {manifest_path}"
    if not entry:
        raise ConfigError(f"{where}: the manifest lists no document hashes (made by an older "
                          "pilepack); rebuild that split, or pass its input files instead")
    if (entry["normalization"], entry["digest"]) != (doc_hash.NORMALIZATION, doc_hash.DIGEST):
        raise ConfigError(
            f"{where}: its hashes are {entry['digest']} of {entry['normalization']} text, this "
            f"pilepack uses {doc_hash.DIGEST} of {doc_hash.NORMALIZATION}; pass its input "
            "files instead")
    paths = []
    for item in entry["files"]:
        path = storage.join(dataset.directory, item["path"])
        fs, stripped = storage.filesystem(path)
        size = fs.size(stripped) if fs.exists(stripped) else None
        if size != item["bytes"]:
            found = ("missing" if size is None
                     else f"{size} bytes, the manifest says {item['bytes']}")
            raise ConfigError(f"{where}: hash file {item['path']} is {found}; copy the whole "
                              "dataset, or pass its input files instead")
        paths.append(path)
    return paths


def resolve(sources: tuple[str, ...], *, inputs: list[InputFile],
            output: str) -> ExclusionSources:
    """Resolve ``--exclude_docs_from`` into hash files and raw input files.

    Raises:
      ConfigError: a source that is this run's own output or input, a manifest without usable
        hashes; InputError: a raw source that matches no file.
    """
    own = {f.path for f in inputs}
    hash_files: list[str] = []
    raw: list[InputFile] = []
    for source in sources:
        manifest = manifest_path(source)
        if manifest is not None:
            if storage.dirname(manifest).rstrip("/") == output.rstrip("/"):
                raise ConfigError(f"--exclude_docs_from {source} is this run's own --output")
            hash_files += hash_files_of(manifest)
            continue
        for file in expand_inputs(source):
            if file.path in own:
                raise ConfigError(f"--exclude_docs_from {source}: {file.path} is also an "
                                  "--input of this run (every document would be removed)")
            raw.append(dataclasses.replace(file, index=len(raw)))
    return ExclusionSources(hash_files=tuple(hash_files), raw_files=tuple(raw))
