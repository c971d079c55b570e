"""Tests for datagen/sample/sources.py, on a hand-made stdlib tree."""

from __future__ import annotations

from datagen.pile_files import read_records
from datagen.sample import build as sample_build

_LEAD = "Lead paragraph of a module. " * 8  # 224 characters: long enough for an article
_MOD_PY = (
    f'"""{_LEAD}"""\n\ndef public():\n    """Does things."""\n\n'
    'def _private():\n    """Hidden."""\n'
)
_TOPICS_PY = "topics = {'if': 'The if statement.', 'for': 'The for statement.'}\n"


def _fake_stdlib(root) -> None:
    files = {
        "mod.py": _MOD_PY.encode(),
        "pkg/__init__.py": b'"""Short."""\n',
        "empty.py": b"\n\n",
        "latin1.py": b"# caf\xe9\n",
        "pydoc_data/topics.py": _TOPICS_PY.encode(),
        "README.txt": b"Read me.\n",
        "LICENSE.txt": b"A license.\n",
        "site-packages/third.py": b'"""Not stdlib."""\n',
        "__pycache__/mod.py": b"x = 1\n",
        "lib2to3/tests/data/README": b"test data\n",
        "test/test_x.py": b"x = 1\n",
        "test/test_email/data/msg_01.txt": b"From: a@example.com\n\nhi\n",
    }
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def test_documents_come_from_the_expected_files(tmp_path):
    _fake_stdlib(tmp_path / "lib")
    files = sample_build.build_sample(
        out_dir=str(tmp_path / "out"), stdlib_dir=str(tmp_path / "lib"), val_every=2
    )
    docs = set()
    for path in (*files.train_paths, files.val_path):
        docs |= {(r["meta"]["pile_set_name"], r["text"]) for r in read_records(path)}
    assert docs == {
        ("Github", _MOD_PY),
        ("Github", '"""Short."""\n'),
        ("Github", _TOPICS_PY),
        ("StackExchange", "The if statement."),
        ("StackExchange", "The for statement."),
        ("Wikipedia (en)", f"mod\n\n{_LEAD}\n\npublic\n\nDoes things."),
        ("Pile-CC", "Read me.\n"),
        ("Pile-CC", "A license.\n"),
        ("Enron Emails", "From: a@example.com\n\nhi\n"),
    }
    # val_every=2: the second selected document of each subset with two or more is held out.
    assert files.doc_counts == {
        "train-00.jsonl.zst": 3,
        "train-01.jsonl.zst": 3,
        "val.jsonl.zst": 3,
    }
