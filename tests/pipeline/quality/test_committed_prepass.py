"""committed_prepass.py: the pre-pass outputs are reused only for the fingerprint they were
committed for, and only once committed."""

from pipeline.quality.committed_prepass import COMMITTED_NAME, commit, committed


def test_committed_outputs_are_reused_for_their_fingerprint_only(tmp_path):
    assert not committed(str(tmp_path), fingerprint="a" * 64)  # nothing committed yet
    commit(str(tmp_path), fingerprint="a" * 64)
    assert committed(str(tmp_path), fingerprint="a" * 64)
    assert not committed(str(tmp_path), fingerprint="b" * 64)
    assert not committed(str(tmp_path), fingerprint="")
    (tmp_path / COMMITTED_NAME).write_text("{damaged")
    assert not committed(str(tmp_path), fingerprint="a" * 64)


def test_an_unknown_fingerprint_commits_nothing(tmp_path):
    commit(str(tmp_path), fingerprint="")
    assert not (tmp_path / COMMITTED_NAME).exists()
