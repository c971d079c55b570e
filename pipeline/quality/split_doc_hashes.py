"""A split's document hashes, next to its manifest: ``doc_hashes/{0..f}.bin``; the stage that
writes them and the check ``verify`` runs on them.

(``pipeline.quality.doc_hash`` is one document's hash; this module is a split's files of them.)
The hash of every document the split writes, each once: 16 files by the digest's first hex
digit, each the sorted distinct 16-byte digests concatenated. They let another run remove this
split's documents with ``--exclude_docs_from=<this manifest>`` alone, without the input files.

``WriteDocHashes``: each parsed chunk's written documents (repeat count >= 1) are hashed on
whichever worker parsed the chunk (after the fan-out, when it is on), keyed by the file their
digest goes to, grouped (a shuffle with 16 keys; every file is written, empty ones included) and
written sorted and distinct, so each file depends only on the data, not on bundling; memory at
the writer is one sixteenth of the split's hashes (16 bytes per document).
"""

from __future__ import annotations

import dataclasses
import hashlib

import apache_beam as beam

from common import storage
from pipeline.quality import doc_hash
from schemas.claim import NO_FENCE, Fence

DIRECTORY = "doc_hashes"


@dataclasses.dataclass(frozen=True)
class DocHashFile:
    path: str  # relative to the dataset directory
    documents: int
    bytes: int
    sha256: str

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def hash_file_path(index: int) -> str:
    return f"{DIRECTORY}/{doc_hash.hash_file_name(index)}"


def write_hash_file(digests, *, directory: str, index: int,
                    fence: Fence = NO_FENCE) -> DocHashFile:
    data = doc_hash.sorted_unique(b"".join(d for d in digests if d is not None))
    relative = hash_file_path(index)
    with storage.atomic_open(storage.join(directory, relative), "wb",
                             before_commit=fence.for_file(relative)) as handle:
        handle.write(data)
    return DocHashFile(path=relative, documents=len(data) // doc_hash.DIGEST_BYTES,
                       bytes=len(data), sha256=hashlib.sha256(data).hexdigest())


def manifest_entry(files: list[DocHashFile]) -> dict:
    """The manifest's ``doc_hashes``: what was hashed how, and the files."""
    files = sorted(files, key=lambda f: f.path)
    return {"normalization": doc_hash.NORMALIZATION, "digest": doc_hash.DIGEST,
            "documents": sum(f.documents for f in files),
            "files": [f.to_json() for f in files]}


def check_files(directory: str, doc: dict) -> list[str]:
    """Problems of a dataset's hash files: missing, size not 16 x documents, sha256."""
    entry = doc.get("doc_hashes")
    if not entry:
        return []
    problems = []
    for item in entry["files"]:
        fs, stripped = storage.filesystem(storage.join(directory, item["path"]))
        if not fs.exists(stripped):
            problems.append(f"{item['path']}: missing")
            continue
        with fs.open(stripped, "rb") as handle:
            data = handle.read()
        if len(data) != item["bytes"] or item["bytes"] != doc_hash.DIGEST_BYTES * item["documents"]:
            problems.append(f"{item['path']}: {len(data)} bytes, the manifest says "
                            f"{item['documents']} hashes of {doc_hash.DIGEST_BYTES} bytes")
        elif hashlib.sha256(data).hexdigest() != item["sha256"]:
            problems.append(f"{item['path']}: sha256 does not match the manifest")
    if sum(item["documents"] for item in entry["files"]) != entry["documents"]:
        problems.append("manifest: doc_hashes.documents is not the sum of its files'")
    return problems


def written_hashes(chunk):
    """(file number, digest) of each document of a chunk that is written (repeats >= 1)."""
    repeats = chunk.repeats or (1,) * len(chunk.documents)
    for doc, count in zip(chunk.documents, repeats):
        if count:
            digest = doc_hash.doc_hash(doc.text)
            yield doc_hash.prefix(digest), digest


class WriteDocHashes(beam.PTransform):
    """PCollection[Chunk] -> PCollection[DocHashFile] (all 16, empty ones included).
    ``reused``: a PCollection of more (file number, digest) pairs, those of the chunks a dead
    run committed (``pipeline.write.committed_parts``)."""

    def __init__(self, *, directory: str, fence: Fence = NO_FENCE, reused=None):
        super().__init__()
        self._directory = directory
        self._fence = fence
        self._reused = reused

    def expand(self, chunks):
        directory, fence = self._directory, self._fence
        every = (chunks.pipeline | "EveryFile" >> beam.Create(range(doc_hash.PREFIXES))
                 | "NoHash" >> beam.Map(lambda index: (index, None)))
        return (
            (chunks | "HashWritten" >> beam.FlatMap(written_hashes), every,
             *([self._reused] if self._reused is not None else []))
            | "AllHashes" >> beam.Flatten()
            | "GroupByFile" >> beam.GroupByKey()
            | "WriteHashFiles" >> beam.MapTuple(
                lambda index, digests: write_hash_file(digests, directory=directory,
                                                       index=index, fence=fence))
        )
