"""dead_letters.py: one JSON Lines file per input file with rejections, written atomically."""

import json

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from common import storage
from pipeline.read.stage import DeadLetter
from pipeline.write import dead_letters
from pipeline.write.dead_letters import DeadLetterFile, WriteDeadLetters, dead_letter_path


def _letter(file_index: int, line: int, reason: str = "invalid_json") -> DeadLetter:
    return DeadLetter(file=f"in/{file_index}.jsonl", file_index=file_index, line=line,
                      offset=10 * line, reason=reason, detail="column 2: bad", excerpt="{x")


def _files(root) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_dead_letter_path_names_split_and_file_index():
    assert dead_letter_path(split="train", file_index=7) == "dead_letters/train-00007.jsonl"
    assert dead_letter_path(split="val", file_index=12345) == "dead_letters/val-12345.jsonl"


def test_one_sorted_file_per_input_file(tmp_path):
    written = [
        dead_letters.write_dead_letters(letters, directory=str(tmp_path), split="train",
                                        file_index=index)
        for index, letters in ((0, [_letter(0, 1, "text_missing")]),
                               (2, [_letter(2, 9), _letter(2, 5)]))  # out of order
    ]
    assert written == [DeadLetterFile("dead_letters/train-00000.jsonl", 1),
                       DeadLetterFile("dead_letters/train-00002.jsonl", 2)]
    assert _files(tmp_path) == [w.path for w in written]  # no .inprogress- leftovers

    text = (tmp_path / "dead_letters" / "train-00002.jsonl").read_text()
    assert text.endswith("\n") and text.count("\n") == 2
    first = text.splitlines()[0]
    assert first == json.dumps(_letter(2, 5).to_json(), sort_keys=True)  # keys sorted
    assert json.loads(first) == {"file": "in/2.jsonl", "file_index": 2, "line": 5, "offset": 50,
                                 "reason": "invalid_json", "detail": "column 2: bad",
                                 "excerpt": "{x"}


def test_dead_letter_file_to_json():
    assert DeadLetterFile("dead_letters/t-00001.jsonl", 3).to_json() == {
        "path": "dead_letters/t-00001.jsonl", "records": 3}


def test_transform_in_a_pipeline(tmp_path):
    out = str(tmp_path / "dataset")
    with beam.Pipeline() as p:
        written = (p | beam.Create([_letter(1, 2), _letter(1, 3), _letter(4, 1)])
                   | WriteDeadLetters(directory=out, split="s"))
        assert_that(written, equal_to([DeadLetterFile("dead_letters/s-00001.jsonl", 2),
                                       DeadLetterFile("dead_letters/s-00004.jsonl", 1)]))
    lines = (tmp_path / "dataset" / "dead_letters" / "s-00001.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["line"] for line in lines) == [2, 3]
    assert storage.TMP_MARKER not in " ".join(_files(tmp_path))


def test_the_file_does_not_depend_on_bundling_or_order(tmp_path):
    letters = [_letter(3, line) for line in (7, 2, 9, 4)]
    contents = set()
    for order in (letters, letters[::-1], letters[1:] + letters[:1]):
        with beam.Pipeline() as p:
            _ = p | beam.Create(order, reshuffle=True) | WriteDeadLetters(
                directory=str(tmp_path), split="s")
        contents.add((tmp_path / "dead_letters" / "s-00003.jsonl").read_bytes())
    assert len(contents) == 1
    lines = contents.pop().decode().splitlines()
    assert [json.loads(line)["line"] for line in lines] == [2, 4, 7, 9]
