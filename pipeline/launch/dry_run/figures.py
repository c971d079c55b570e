"""What a run would read and write, from the dry run's samples: per input file, then summed.

A file read to its end (``FileSample.complete``) is counted as the run counts it: its sampled
documents are its documents; those the pre-pass drops (``pipeline.launch.dry_run.drops``:
duplicates, near duplicates, decontaminated) drop; each other one gets the run's own number
of copies (``pipeline.quality.mixture.repeat_count``, drawn from the seed, the file and the
line, so the same draws as the run's); each chunk is packed epoch by epoch
(``pipeline.write.pack.epochs``) into ``ceil`` (``--last_record=pad``) or ``floor`` (drop) of
its label positions over ``seq_len`` records. Every figure is then exact.

Any other file is extrapolated per byte of text from its own sample (or, when it was not
sampled, from all samples pooled): the share of each drop reason the sample holds, each
subset's documents, text and tokens, and the mixture's *expected* copies (the weight) instead
of draws; records are label positions over ``seq_len`` plus half a record per chunk and epoch
(the mean effect of a partial last record).
"""

from __future__ import annotations

import dataclasses
import itertools
import math

from pipeline.launch.dry_run.sample import FileSample
from pipeline.quality.mixture import repeat_count
from pipeline.read.inputs import InputFile
from pipeline.write.pack import epochs


@dataclasses.dataclass
class Counts:
    """Documents, their text bytes and their tokens (document tokens, no EOS)."""

    documents: float = 0.0
    text: float = 0.0
    tokens: float = 0.0

    def add(self, other: "Counts", scale: float = 1.0) -> None:
        self.documents += other.documents * scale
        self.text += other.text * scale
        self.tokens += other.tokens * scale


@dataclasses.dataclass
class Figures:
    """One file's figures, or the run's (``add``)."""

    text: float = 0.0  # text bytes of the documents read (selected subsets)
    documents: float = 0.0  # read
    tokens: float = 0.0  # of the documents read
    dropped: dict = dataclasses.field(default_factory=dict)  # reason -> documents (pre-pass)
    chunks: float = 0.0
    records: float = 0.0
    before: dict = dataclasses.field(default_factory=dict)  # subset -> Counts kept, once each
    after: dict = dataclasses.field(default_factory=dict)  # subset -> Counts written (copies)

    def add(self, other: "Figures") -> None:
        for name in ("text", "documents", "tokens", "chunks", "records"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for reason, count in other.dropped.items():
            self.dropped[reason] = self.dropped.get(reason, 0.0) + count
        for mine, theirs in ((self.before, other.before), (self.after, other.after)):
            for subset, counts in theirs.items():
                mine.setdefault(subset, Counts()).add(counts)

    def written(self) -> Counts:
        """Every subset's written documents, text and tokens, summed."""
        total = Counts()
        for counts in self.after.values():
            total.add(counts)
        return total


@dataclasses.dataclass(frozen=True)
class Packing:
    """What the packing rules need (``pipeline.write.pack``)."""

    seq_len: int
    last_record: str  # pad | drop
    chunk_bytes: int


def exact_figures(sample: FileSample, *, drops: dict, weights: dict, seed: int,
                  packing: Packing) -> Figures:
    """A file read to its end, counted as the run counts it (see the module docstring);
    ``drops``: line -> reason of its documents the pre-pass drops."""
    fig = Figures(text=sample.text_bytes, documents=sample.documents, tokens=sample.tokens)
    rounding = math.ceil if packing.last_record == "pad" else math.floor
    for _, docs in itertools.groupby(sample.docs, key=lambda doc: doc.chunk):
        docs = list(docs)
        kept = [doc for doc in docs if doc.line not in drops]
        fig.chunks += 1
        for doc in docs:
            if doc.line in drops:
                fig.dropped[drops[doc.line]] = fig.dropped.get(drops[doc.line], 0) + 1
        copies = [repeat_count(weights, subset=doc.subset, seed=seed,
                               file_index=sample.file.index, line=doc.line)
                  for doc in kept] if weights else []
        for doc, count in zip(kept, copies or [1] * len(kept)):
            one = Counts(1, doc.text_bytes, doc.tokens)
            fig.before.setdefault(doc.subset, Counts()).add(one)
            fig.after.setdefault(doc.subset, Counts()).add(one, count)
        for _, packed in epochs(kept, copies):  # as pipeline.write.pack packs the chunk
            fig.records += rounding(sum(doc.tokens + 1 for doc in packed) / packing.seq_len)
    return fig


@dataclasses.dataclass
class Profile:
    """Per byte of text: what a sample (or several, pooled) says about the rest of a file."""

    text_per_input_byte: float = 0.0
    lines_per_text: float = 1.0  # bytes of JSON lines per byte of text (chunks are cut by them)
    documents: float = 0.0
    tokens: float = 0.0
    dropped: dict = dataclasses.field(default_factory=dict)  # reason -> documents
    kept: dict = dataclasses.field(default_factory=dict)  # subset -> Counts


def profile(samples: list[FileSample], *, drops: dict) -> Profile:
    """The per-text-byte figures of ``samples`` together (``drops``: file index -> {line:
    reason} of sampled documents the pre-pass drops)."""
    text = sum(s.text_bytes for s in samples)
    result = Profile()
    if not text:
        return result
    input_bytes = sum(s.file.bytes for s in samples)
    result.text_per_input_byte = (sum(s.text_per_input_byte * s.file.bytes for s in samples)
                                  / max(1, input_bytes))
    result.lines_per_text = sum(s.line_bytes for s in samples) / text
    result.documents = sum(s.documents for s in samples) / text
    result.tokens = sum(s.tokens for s in samples) / text
    for s in samples:
        dropped = drops.get(s.file.index, {})
        for doc in s.docs:
            if doc.line in dropped:
                reason = dropped[doc.line]
                result.dropped[reason] = result.dropped.get(reason, 0.0) + 1 / text
            else:
                result.kept.setdefault(doc.subset, Counts()).add(
                    Counts(1, doc.text_bytes, doc.tokens), 1 / text)
    return result


def extrapolated_figures(file: InputFile, shape: Profile, *, weights: dict,
                         packing: Packing) -> Figures:
    """A file not read to its end, from the per-text-byte ``shape`` of its sample (or of all
    samples), with the mixture's expected copies."""
    text = file.bytes * shape.text_per_input_byte
    fig = Figures(text=text, documents=text * shape.documents, tokens=text * shape.tokens,
                  dropped={reason: text * v for reason, v in shape.dropped.items()})
    # Chunks are cut by the bytes of their lines (JSON), not of their text.
    fig.chunks = math.ceil(text * shape.lines_per_text / packing.chunk_bytes) if text else 0
    packs = 1
    for subset, counts in shape.kept.items():
        weight = weights.get(subset, 1.0)
        fig.before.setdefault(subset, Counts()).add(counts, text)
        fig.after.setdefault(subset, Counts()).add(counts, text * weight)
        packs = max(packs, math.ceil(weight))  # a chunk is packed once per epoch
    written = fig.written()
    half = 0.5 if packing.last_record == "pad" else -0.5  # the mean effect of a chunk's tail
    labels = written.tokens + written.documents
    fig.records = max(0.0, labels / packing.seq_len + fig.chunks * packs * half) if labels else 0
    return fig


def run_figures(samples: list[FileSample], *, inputs: list[InputFile], drops: dict,
                weights: dict, seed: int, packing: Packing) -> list[Figures]:
    """Each input file's figures, in input order (see the module docstring; ``drops``: as
    ``profile``'s)."""
    by_path = {s.file.path: s for s in samples}
    pooled = profile(samples, drops=drops)
    figures = []
    for file in inputs:
        sample = by_path.get(file.path)
        if sample is not None and sample.complete:
            figures.append(exact_figures(
                sample, drops=drops.get(file.index, {}), weights=weights,
                seed=seed, packing=packing))
            continue
        shape = (profile([sample], drops=drops) if sample is not None
                 and sample.text_bytes else pooled)
        figures.append(extrapolated_figures(file, shape, weights=weights, packing=packing))
    return figures


def summed(figures: list[Figures]) -> Figures:
    total = Figures()
    for fig in figures:
        total.add(fig)
    return total
