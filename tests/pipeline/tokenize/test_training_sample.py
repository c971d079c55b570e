"""training_sample.py: quota allocation, piece cutting, deterministic priorities."""

from pipeline.tokenize.training_sample import allocate_quotas, priority, split_pieces


def test_allocate_quotas_water_filling():
    assert allocate_quotas({"a": 10, "b": 100, "c": 100}, sample_bytes=100) == {
        "a": 10, "b": 45, "c": 45}
    assert allocate_quotas({"a": 10, "b": 20}, sample_bytes=1000) == {"a": 10, "b": 20}
    assert allocate_quotas({"a": 90, "b": 90, "c": 90}, sample_bytes=90) == {
        "a": 30, "b": 30, "c": 30}
    assert allocate_quotas({}, sample_bytes=10) == {}


def test_split_pieces_keeps_newlines_and_bounds_size():
    text = "def f():\n    return 1\n\n" * 50
    pieces = split_pieces(text, max_piece_bytes=64)
    assert "".join(pieces) == text
    assert all(len(p.encode()) <= 64 for p in pieces)
    assert pieces[0] == "def f():\n    return 1\n\n" * 2 + "def f():\n"  # 55 bytes; +13 > 64


def test_split_pieces_cuts_a_very_long_line():
    text = "é" * 100  # 200 UTF-8 bytes, no newline
    pieces = split_pieces(text, max_piece_bytes=40)
    assert "".join(pieces) == text and all(len(p.encode()) <= 40 for p in pieces)


def test_priority_is_deterministic_and_seeded():
    a = priority(seed=0, file_index=1, line=2, piece=3)
    assert a == priority(seed=0, file_index=1, line=2, piece=3)
    assert a != priority(seed=1, file_index=1, line=2, piece=3)
    assert 0.0 <= a < 1.0
