"""committed_parts.py: a chunk is reused only when every record of it was committed for the same
fingerprint (all or nothing), and its records come back out to the outputs they came from."""

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipeline.read.parse import Document
from pipeline.read.stage import Chunk, DeadLetter, ReadStats
from pipeline.write.committed_parts import (
    COMMITTED_DIR,
    DIGESTS,
    MAIN,
    PARTS,
    STATS,
    CommittedParts,
    ReplayCommitted,
    ResumeCount,
    ReusedChunk,
)

FINGERPRINT = "f" * 64


def _chunk(repeats=()) -> Chunk:
    docs = tuple(Document(text=f"document {i}", subset="Pile-CC", line=i + 1, text_bytes=10)
                 for i in range(3))
    return Chunk(0, 2, docs, repeats=repeats)


def _commit(store: CommittedParts, *, repeats=(), epochs=None) -> list:
    stats = ReadStats(file_index=0, path="in.jsonl", documents=3)
    dead = DeadLetter("in.jsonl", 0, 4, 40, "bad_json", "detail", "{")
    parsed = [("dead_letters", dead), ("read_stats", stats)]
    store.commit_read(0, 2, chunk=_chunk(repeats), outputs=parsed)
    store.commit_encode(0, 2, stats="encode-stats")
    for epoch in range(max(repeats, default=1) if epochs is None else epochs):
        store.commit_part(0, 2, epoch=epoch, outputs=[(MAIN, f"part-{epoch}"),
                                                      ("chunk_stats", f"stats-{epoch}")])
    return parsed


def test_a_chunk_whose_records_are_all_committed_is_reused_with_its_outputs(tmp_path):
    store = CommittedParts(directory=str(tmp_path), fingerprint=FINGERPRINT)
    parsed = _commit(store, repeats=(2, 0, 1))
    outputs, unit = store.reused_chunk(0, 2)
    assert [(tag, type(value).__name__) for tag, value in outputs] == [
        ("dead_letters", "DeadLetter"), ("read_stats", "ReadStats")]
    assert outputs == parsed
    assert unit.encoded == "encode-stats" and len(unit.digests) == 2  # documents with copies
    assert unit.outputs == ((MAIN, "part-0"), ("chunk_stats", "stats-0"), (MAIN, "part-1"),
                            ("chunk_stats", "stats-1"))


def test_a_missing_epoch_another_fingerprint_or_no_reuse_recomputes_the_chunk(tmp_path):
    store = CommittedParts(directory=str(tmp_path), fingerprint=FINGERPRINT)
    _commit(store, repeats=(2, 0, 1), epochs=1)  # epoch 1's part is not committed
    assert store.reused_chunk(0, 2) is None
    _commit(store, repeats=(2, 0, 1))
    assert store.reused_chunk(0, 2) is not None
    assert CommittedParts(directory=str(tmp_path), fingerprint="0" * 64).reused_chunk(0, 2) is None
    assert CommittedParts(directory=str(tmp_path), fingerprint=FINGERPRINT,
                          reuse=False).reused_chunk(0, 2) is None
    (tmp_path / COMMITTED_DIR / "00000-0000002.encode").write_bytes(b"damaged")
    assert store.reused_chunk(0, 2) is None


def test_an_unknown_fingerprint_commits_nothing(tmp_path):
    _commit(CommittedParts(directory=str(tmp_path), fingerprint=""))
    assert not (tmp_path / COMMITTED_DIR).exists()


def test_a_file_is_reused_whole_only_when_every_chunk_is(tmp_path):
    store = CommittedParts(directory=str(tmp_path), fingerprint=FINGERPRINT)
    _commit(store)
    store.commit_file(0, outputs={"outputs": [("read_stats", "file-stats")], "chunks": 3})
    assert store.reused_file(0) is None  # chunks 0 and 1 are not committed
    for index in (0, 1):
        store.commit_read(0, index, chunk=None, outputs=[])  # every document dropped
    outputs, units = store.reused_file(0)
    assert outputs == [("read_stats", "file-stats")] and len(units) == 3
    assert units[0][1].outputs == () and units[0][1].encoded is None


def test_replay_sends_each_record_to_the_output_it_came_from():
    unit = ReusedChunk(0, 2, digests=((3, b"d" * 16),), encoded="encode-stats",
                       outputs=((MAIN, "part-0"), ("chunk_stats", "stats-0"),
                                ("megatron", "megatron-part-0")))
    with BeamTestPipeline() as p:
        out = p | beam.Create([unit]) | ReplayCommitted(format_names=("megatron",))
        assert_that(out[PARTS], equal_to(["part-0"]), label="Parts")
        assert_that(out[DIGESTS], equal_to([(3, b"d" * 16)]), label="Digests")
        assert_that(out["megatron"], equal_to(["megatron-part-0"]), label="Megatron")
        assert_that(out[STATS], equal_to(["encode-stats", ResumeCount(reused=1), "stats-0"]),
                    label="Stats")


class _Plant:
    """A record planted by someone with write access to --output: unpickling it would call
    ``pathlib.Path.touch``."""

    def __init__(self, marker):
        self._marker = marker

    def __reduce__(self):
        import pathlib
        return pathlib.Path.touch, (pathlib.Path(self._marker),)


def test_a_record_naming_any_other_global_is_refused_without_calling_it(tmp_path):
    import pickle

    committed = CommittedParts(directory=str(tmp_path), fingerprint=FINGERPRINT)
    marker = tmp_path / "called"
    record = tmp_path / COMMITTED_DIR / "00000-0000002.read"
    record.parent.mkdir(parents=True)
    record.write_bytes(pickle.dumps({"format": 1, "fingerprint": FINGERPRINT,
                                     "value": _Plant(str(marker))}))
    assert committed.reused_chunk(0, 2) is None
    assert not marker.exists()
