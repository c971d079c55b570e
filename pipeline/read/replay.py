"""Read's side of a rerun: what it emits for a chunk a dead run committed, and what it records
of a chunk it parses (the records themselves: ``pipeline.write.committed_parts``).

Read checks each file's and chunk's records before it reads them; a committed chunk's Parse
outputs (dead letters, ReadStats) come out as they were, and the rest of what its stages sent
on, as one ``ReusedChunk``, on the ``REUSED`` output.
"""

from __future__ import annotations

import apache_beam as beam

REUSED = "reused"  # chunks a dead run committed


def replayed(outputs, units):
    """A committed file's own ``outputs`` (``(tag, value)`` pairs) and its chunks' ``units``
    (``(Parse's outputs, ReusedChunk)``), as Read's outputs: dead letters and ReadStats as
    they were, the rest to ``REUSED``."""
    for tag, value in outputs:
        yield beam.pvalue.TaggedOutput(tag, value)
    for parsed, unit in units:
        for tag, value in parsed:
            yield beam.pvalue.TaggedOutput(tag, value)
        yield beam.pvalue.TaggedOutput(REUSED, unit)


def committed_parse(committed, raw, outputs: list):
    """Record the Parse ``outputs`` of one RawChunk ``raw`` in ``committed`` (a
    ``CommittedParts``), then pass them on: the Chunk (the main output, if any) and the
    tagged rest."""
    chunk = next((item for item in outputs
                  if not isinstance(item, beam.pvalue.TaggedOutput)), None)
    committed.commit_read(raw.file_index, raw.chunk_index, chunk=chunk, outputs=[
        (item.tag, item.value) for item in outputs
        if isinstance(item, beam.pvalue.TaggedOutput)])
    yield from outputs
