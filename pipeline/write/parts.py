"""Stage 4a, WriteParts: each packed chunk's framed records -> one part file, atomically.

A part is named by its chunk's (epoch, input file, chunk) key (``shard_plan.part_path``), so
a retried or duplicated bundle rewrites the same bytes under the same name, and any worker may
write any chunk. The parts are cut into shards once all exist (``pipeline.write.shards``) and are
deleted when the manifest is committed. Each format built from documents
(``pipeline.write.formats.base``) writes its own part of the chunk beside it, under the same key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import apache_beam as beam

from common import storage
from pipeline.quality.mixture import BeforeMixture
from pipeline.tokenize.subset_stats import SubsetStats, merge_into, summed
from pipeline.write import progress
from pipeline.write.committed_parts import CommittedParts, outputs_of, tagged
from pipeline.write.pack import PackedChunk, PackStats
from pipeline.write.shard_plan import PartInfo, part_path
from schemas.claim import NO_FENCE, Fence
from schemas.records import TOKENS, RecordSpec, frame_examples

CHUNK_STATS = "chunk_stats"
SUBSET_METRICS = "pilepack.subsets"  # Beam counters "<pile_set_name>/<documents|bytes|tokens>"


@dataclasses.dataclass(frozen=True)
class PartDocuments:
    """The documents of one part, counted where it is written, for the manifest's check that
    they are the ones Parse passed on (``pipeline.dataset.manifest.check_documents_accounted``).
    """

    file_index: int
    epoch: int
    documents: int  # in the part's records (a document's copy number ``epoch``)
    # Epoch 0 only: the copies of the chunk's documents in all its epochs' parts, as Tokenize
    # counted them from the chunk's repeats (its subsets; without a mixture: its documents).
    copies: int = 0


@dataclasses.dataclass
class ChunkStats:
    """Packing statistics and per-subset totals: one chunk's on their way to the manifest, or
    the sum of many (``merge``)."""

    pack: PackStats = dataclasses.field(default_factory=PackStats)
    subsets: dict[str, SubsetStats] = dataclasses.field(default_factory=dict)

    def merge(self, other: ChunkStats) -> None:
        """Add ``other``'s (unchanged) to these."""
        self.pack = self.pack + other.pack
        merge_into(self.subsets, other.subsets)

    add = merge  # as a manifest total (pipeline.dataset.statistics), it adds chunks' stats


def padded_records(features: dict, *, pad_id: int) -> tuple[tuple[int, int], ...]:
    """(record index, padding tokens) of every record holding padding."""
    pads = (features[TOKENS] == pad_id).sum(axis=1)
    return tuple((int(i), int(pads[i])) for i in pads.nonzero()[0])


def write_part(chunk: PackedChunk, *, directory: str, spec: RecordSpec, pad_id: int,
               fence: Fence = NO_FENCE) -> PartInfo:
    relative = part_path(file_index=chunk.file_index, chunk_index=chunk.chunk_index,
                         epoch=chunk.epoch)
    data = frame_examples(chunk.features, spec)  # every record framed, as one bytes object
    with storage.atomic_open(storage.join(directory, relative), "wb",
                             before_commit=fence.for_file(relative)) as handle:
        handle.write(data)
    return PartInfo(file_index=chunk.file_index, chunk_index=chunk.chunk_index, path=relative,
                    records=len(chunk.features[TOKENS]), bytes=len(data),
                    padded=padded_records(chunk.features, pad_id=pad_id), epoch=chunk.epoch)


class _WritePartFn(beam.DoFn):
    def __init__(self, *, directory: str, spec: RecordSpec, pad_id: int, formats: Sequence = (),
                 fence: Fence = NO_FENCE, committed: CommittedParts | None = None):
        self._directory = directory
        self._fence = fence
        self._spec = spec
        self._pad_id = pad_id
        self._formats = {fmt.name: fmt for fmt in formats}
        self._committed = committed

    def process(self, chunk: PackedChunk):
        if self._committed is None:
            yield from self._write(chunk)
            return
        outputs = outputs_of(self._write(chunk))  # its files are written: commit, pass on
        self._committed.commit_part(chunk.file_index, chunk.chunk_index, epoch=chunk.epoch,
                                    outputs=outputs)
        yield from tagged(outputs)

    def _write(self, chunk: PackedChunk):
        info = write_part(chunk, directory=self._directory, spec=self._spec, pad_id=self._pad_id,
                          fence=self._fence)
        beam.metrics.Metrics.counter("write", "records").inc(info.records)
        done = summed(chunk.subsets.values())  # the chunk's copies: epoch 0 only, else none
        # For the launcher's progress (pipeline.write.progress), and the runner's UI.
        if chunk.epoch == 0:
            progress.write_sidecar(self._directory, info.path, file_index=chunk.file_index,
                                   input_bytes=chunk.input_offset - chunk.input_start,
                                   documents=done.documents, text_bytes=done.bytes,
                                   tokens=done.tokens, fence=self._fence)
            for name, stats in chunk.subsets.items():
                for field in ("documents", "bytes", "tokens"):
                    beam.metrics.Metrics.counter(SUBSET_METRICS, f"{name}/{field}").inc(
                        getattr(stats, field))
        yield info
        for name, data in chunk.format_data.items():  # each format's part, under its name
            yield beam.pvalue.TaggedOutput(name, self._formats[name].write_part(
                data, file_index=chunk.file_index, chunk_index=chunk.chunk_index,
                epoch=chunk.epoch))
        # Per-chunk statistics travel on to the manifest.
        yield beam.pvalue.TaggedOutput(CHUNK_STATS, ChunkStats(chunk.stats, chunk.subsets))
        yield beam.pvalue.TaggedOutput(CHUNK_STATS, PartDocuments(
            chunk.file_index, chunk.epoch, chunk.documents, copies=done.documents))
        if chunk.before is not None:
            yield beam.pvalue.TaggedOutput(CHUNK_STATS, BeforeMixture(chunk.before))


class WriteParts(beam.PTransform):
    """PCollection[PackedChunk] -> {main: PartInfo, chunk_stats: ChunkStats, PartDocuments
    and BeforeMixture, and for each of ``formats`` (those built from documents, as given to
    Pack) under its name: its parts' infos}. ``fence``: checked before each file is committed
    (``schemas.claim.Fence``). ``committed``: each part's outputs are recorded once its files
    are written (``pipeline.write.committed_parts``)."""

    def __init__(self, *, directory: str, spec: RecordSpec, pad_id: int, formats: Sequence = (),
                 fence: Fence = NO_FENCE, committed: CommittedParts | None = None):
        super().__init__()
        self._fn = _WritePartFn(directory=directory, spec=spec, pad_id=pad_id, formats=formats,
                                fence=fence, committed=committed)
        self._tags = tuple(fmt.name for fmt in formats)

    def expand(self, chunks):
        return chunks | "WritePartFiles" >> beam.ParDo(self._fn).with_outputs(
            CHUNK_STATS, *self._tags, main="parts")
