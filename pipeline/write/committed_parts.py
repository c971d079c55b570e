"""Committed chunks, for a rerun: what a dead run finished for a chunk is reused, not recomputed.

A chunk (``pipeline.read.stage.RawChunk``: one input file's lines) is the unit of reuse. Each
stage that handles it records, in a small file under ``.parts/committed/`` written atomically
*after* the chunk's own files (so its presence means they are complete), what it sent on to the
manifest, the dead letters and the document hashes:

    F-C.read      Parse: the chunk's dead letters and ReadStats, its written documents' digests,
                  and how many epochs its parts have (0: every document was dropped)
    F-C.encode    Tokenize: its EncodeStats
    F-C-eE.part   WriteParts: epoch E's outputs (PartInfo, the other formats' parts, statistics)
    F.file        Read: the file's own ReadStats (lines, format), its stream's dead letters and
                  how many chunks it has

(F: input file index, C: chunk index, E: epoch.) Each record holds the run's fingerprint
(``pipeline.launch.resume.run_fingerprint``: the options that shape the bytes, every input's
path, size and version, the tokenizer's sha256, the format version). A rerun with the same
fingerprint reuses a chunk only when all its records are there and match (all or nothing), and
then a file's reader emits them instead of the chunk (``ReadDocuments``), before reading it when
the whole file is committed. The records live beside the parts, written by whichever worker
wrote them, so this works alike on every runner; they go with ``.parts/`` when the manifest is
committed.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import pickle

import apache_beam as beam

from common import storage
from pipeline.quality.split_doc_hashes import written_hashes
from pipeline.write.pack import epochs
from pipeline.write.shard_plan import PARTS_DIR
from schemas.claim import NO_FENCE, Fence

COMMITTED_DIR = f"{PARTS_DIR}/committed"
# Raise when what a record holds, or the bytes of what it stands for, change for the same
# options: records of an older format are then not reused.
FORMAT = 1
MAIN = "main"  # the tag of a DoFn's main output in a recorded list of outputs

PARTS = "parts"  # ReplayCommitted's outputs
STATS = "stats"
DIGESTS = "digests"


@dataclasses.dataclass
class ResumeCount:
    """Chunks reused from a dead run's records, and chunks computed, for the manifest's
    ``resume`` (a Combine total: ``add`` one, ``merge`` another total)."""

    reused: int = 0
    computed: int = 0

    def add(self, other: ResumeCount) -> None:
        self.reused += other.reused
        self.computed += other.computed

    merge = add


@dataclasses.dataclass(frozen=True)
class ReusedChunk:
    """A committed chunk's outputs below Read: its documents' ``digests``, its ``encoded``
    EncodeStats (None: no documents were tokenized), and each epoch's WriteParts ``outputs`` as
    ``(tag, value)`` pairs."""

    file_index: int
    chunk_index: int
    digests: tuple = ()
    encoded: object = None
    outputs: tuple = ()


def outputs_of(results) -> list[tuple[str, object]]:
    """A DoFn's yielded values as ``(tag, value)`` pairs (``MAIN`` for the main output)."""
    return [(item.tag, item.value) if isinstance(item, beam.pvalue.TaggedOutput)
            else (MAIN, item) for item in results]


def tagged(outputs, *, main: str = MAIN):
    """Inverse of ``outputs_of``: the values to yield again (``main``: the main output's tag
    when it is to go elsewhere)."""
    for tag, value in outputs:
        yield value if tag == MAIN and main == MAIN else beam.pvalue.TaggedOutput(
            main if tag == MAIN else tag, value)


@dataclasses.dataclass(frozen=True)
class CommittedParts:
    """The records of ``directory``'s chunks for the run ``fingerprint`` names. Every run
    commits them; only a run with ``reuse`` (``--resume``) reads them. A fingerprint of ""
    (an input whose version is unknown) commits and reuses nothing."""

    directory: str
    fingerprint: str
    reuse: bool = True
    fence: Fence = NO_FENCE  # checked before each record is committed (schemas.claim)

    # -- committing (by the stages, after their files) ------------------------------------
    def commit_file(self, file_index: int, *, outputs) -> None:
        self._write(f"{file_index:05d}.file", outputs)

    def commit_read(self, file_index: int, chunk_index: int, *, outputs, chunk) -> None:
        """Parse's ``outputs`` of one chunk but the chunk itself; ``chunk``: the Chunk it
        passed on (None: none)."""
        digests = tuple(written_hashes(chunk)) if chunk is not None else ()
        count = 0 if chunk is None else sum(1 for _ in epochs(chunk.documents, chunk.repeats))
        self._write(_key(file_index, chunk_index) + ".read",
                    {"outputs": outputs, "digests": digests, "epochs": count})

    def commit_encode(self, file_index: int, chunk_index: int, *, stats) -> None:
        self._write(_key(file_index, chunk_index) + ".encode", stats)

    def commit_part(self, file_index: int, chunk_index: int, *, epoch: int, outputs) -> None:
        self._write(f"{_key(file_index, chunk_index)}-e{epoch:04d}.part", outputs)

    def computed(self) -> ResumeCount:
        """The count of one chunk computed (not reused), for the manifest."""
        return ResumeCount(computed=1)

    # -- reusing (by Read, before it reads) ------------------------------------------------
    def reused_file(self, file_index: int):
        """``(file outputs, [(read outputs, ReusedChunk), ...])`` when the whole file is
        committed; else None."""
        recorded = self._read(f"{file_index:05d}.file")
        if recorded is None:
            return None
        chunks = recorded["chunks"]
        units = [self.reused_chunk(file_index, index) for index in range(chunks)]
        return None if any(u is None for u in units) else (recorded["outputs"], units)

    def reused_chunk(self, file_index: int, chunk_index: int):
        """``(Parse's outputs, ReusedChunk)`` when every record of the chunk is committed;
        else None (the chunk is computed again, all of it)."""
        key = _key(file_index, chunk_index)
        read = self._read(key + ".read")
        if read is None:
            return None
        encoded = None
        parts = []
        if read["epochs"]:
            encoded = self._read(key + ".encode")
            parts = [self._read(f"{key}-e{epoch:04d}.part") for epoch in range(read["epochs"])]
            if encoded is None or any(p is None for p in parts):
                return None
        outputs = tuple(pair for part in parts for pair in part)
        return read["outputs"], ReusedChunk(file_index, chunk_index, digests=read["digests"],
                                            encoded=encoded, outputs=outputs)

    # -- the records -----------------------------------------------------------------------
    def _path(self, name: str) -> str:
        return storage.join(self.directory, COMMITTED_DIR, name)

    def _write(self, name: str, value) -> None:
        if not self.fingerprint:
            return
        data = pickle.dumps({"format": FORMAT, "fingerprint": self.fingerprint,
                             "value": value}, protocol=pickle.HIGHEST_PROTOCOL)
        path = self._path(name)
        with storage.atomic_open(path, "wb", before_commit=self.fence.for_file(path)) as handle:
            handle.write(data)

    def _read(self, name: str):
        if not (self.reuse and self.fingerprint):
            return None
        fs, path = storage.filesystem(self._path(name))
        try:
            doc = _RecordUnpickler(io.BytesIO(fs.cat_file(path))).load()
        except FileNotFoundError:
            return None
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError,
                ValueError):  # written by other software, or damaged: not this run's, recompute
            return None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT \
                or doc.get("fingerprint") != self.fingerprint:
            return None
        return doc["value"]


_PROJECT = ("common.", "schemas.", "tokenizer.", "pipeline.")
_BUILTINS = frozenset({"set", "frozenset", "dict", "list", "tuple", "int", "float", "str",
                       "bytes", "bytearray", "bool", "complex", "slice", "range"})
_LIBRARY = frozenset({("collections", "Counter"), ("collections", "OrderedDict"),
                      ("collections", "defaultdict"), ("numpy", "ndarray"), ("numpy", "dtype"),
                      ("numpy.core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
                      ("numpy._core.multiarray", "_reconstruct"),
                      ("numpy._core.multiarray", "scalar")})


class _RecordUnpickler(pickle.Unpickler):
    """Reads a record back, refusing every global but the project's record types (dataclasses,
    named tuples, enums), plain containers and numpy arrays: a record in ``--output`` is data
    anyone with write access there could have written, so no function may be called from it
    (the "restricting globals" recipe of Python's pickle documentation)."""

    def find_class(self, module: str, name: str):
        if (module == "builtins" and name in _BUILTINS) or (module, name) in _LIBRARY:
            return super().find_class(module, name)
        if module.startswith(_PROJECT):
            found = super().find_class(module, name)
            if isinstance(found, type) and (dataclasses.is_dataclass(found)
                                            or issubclass(found, (tuple, enum.Enum))):
                return found
        raise pickle.UnpicklingError(f"a record may not name {module}.{name}")


def _key(file_index: int, chunk_index: int) -> str:
    return f"{file_index:05d}-{chunk_index:07d}"


class _ReplayFn(beam.DoFn):
    """ReusedChunk -> its recorded outputs: digests, statistics, parts, the formats' parts."""

    def __init__(self, format_names: tuple[str, ...]):
        self._formats = frozenset(format_names)

    def process(self, unit: ReusedChunk):
        beam.metrics.Metrics.counter("resume", "chunks_reused").inc()
        for digest in unit.digests:
            yield beam.pvalue.TaggedOutput(DIGESTS, digest)
        if unit.encoded is not None:
            yield beam.pvalue.TaggedOutput(STATS, unit.encoded)
        yield beam.pvalue.TaggedOutput(STATS, ResumeCount(reused=1))
        for tag, value in unit.outputs:
            if tag == MAIN:
                yield beam.pvalue.TaggedOutput(PARTS, value)
            else:  # a format's part info under its name; anything else is a statistic
                yield beam.pvalue.TaggedOutput(tag if tag in self._formats else STATS, value)


class ReplayCommitted(beam.PTransform):
    """PCollection[ReusedChunk] -> {parts: PartInfo, stats: the manifest's statistics,
    digests: (hash file, digest), and for each format of ``format_names``: its parts' infos}:
    what the chunk's stages sent on when they computed it."""

    def __init__(self, *, format_names: tuple[str, ...] = ()):
        super().__init__()
        self._tags = tuple(format_names)

    def expand(self, units):
        return units | "Replay" >> beam.ParDo(_ReplayFn(self._tags)).with_outputs(
            PARTS, STATS, DIGESTS, *self._tags)
