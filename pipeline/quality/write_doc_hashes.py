"""Stage: the hashes of the documents a split writes -> ``doc_hashes/{0..f}.bin``.

Each parsed chunk's written documents (repeat count >= 1) are hashed on whichever worker
parsed the chunk (after the fan-out, when it is on), keyed by the file their digest goes to,
grouped (16 keys; every file is written, empty ones included) and written sorted and distinct
(``pipeline.quality.doc_hash_files``).
"""

from __future__ import annotations

import apache_beam as beam

from pipeline.quality import doc_hash
from pipeline.quality.doc_hash_files import write_hash_file


def written_hashes(chunk):
    """(file number, digest) of each document of a chunk that is written (repeats >= 1)."""
    repeats = chunk.repeats or (1,) * len(chunk.documents)
    for doc, count in zip(chunk.documents, repeats):
        if count:
            digest = doc_hash.doc_hash(doc.text)
            yield doc_hash.prefix(digest), digest


class WriteDocHashes(beam.PTransform):
    """PCollection[Chunk] -> PCollection[DocHashFile] (all 16, empty ones included)."""

    def __init__(self, *, directory: str):
        super().__init__()
        self._directory = directory

    def expand(self, chunks):
        directory = self._directory
        every = (chunks.pipeline | "EveryFile" >> beam.Create(range(doc_hash.PREFIXES))
                 | "NoHash" >> beam.Map(lambda index: (index, None)))
        return (
            (chunks | "HashWritten" >> beam.FlatMap(written_hashes), every)
            | "AllHashes" >> beam.Flatten()
            | "GroupByFile" >> beam.GroupByKey()
            | "WriteHashFiles" >> beam.MapTuple(
                lambda index, digests: write_hash_file(digests, directory=directory,
                                                       index=index))
        )
