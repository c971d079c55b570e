"""parse.py: every record shape and every rejection reason, hand-written lines."""

import pytest

from pipeline.read.parse import UNKNOWN_SUBSET, Document, Filtered, Rejected, parse_line


def test_pile_record():
    doc = parse_line(b'{"text": "caf\\u00e9", "meta": {"pile_set_name": "Github"}}', line=3)
    assert doc == Document(text="café", subset="Github", line=3, text_bytes=5)


@pytest.mark.parametrize("line,text,subset", [
    (b'{"text": ["a", "b"], "meta": {"pile_set_name": "X"}}', "a\n\nb", "X"),  # lm_dataformat list
    (b'"bare string line"', "bare string line", UNKNOWN_SUBSET),
    (b'{"text": "t"}', "t", UNKNOWN_SUBSET),  # missing meta
    (b'{"text": "t", "meta": "Github"}', "t", UNKNOWN_SUBSET),  # meta not an object
    (b'{"text": "t", "meta": {"x": 1}}', "t", UNKNOWN_SUBSET),
    (b'{"text": "t", "meta": null}', "t", UNKNOWN_SUBSET),
    (b'{"meta": {"pile_set_name": "New"}, "extra": 1, "text": "t"}', "t", "New"),
    (b'{"text": " "}', " ", UNKNOWN_SUBSET),  # whitespace is text, kept
    (b'{"text": "a\\u0000b"}', "a\x00b", UNKNOWN_SUBSET),  # escaped NUL is valid text
    (b'{"text": "\\ud83d\\ude00"}', "\U0001F600", UNKNOWN_SUBSET),  # a valid surrogate pair
])
def test_accepted_shapes(line, text, subset):
    doc = parse_line(line, line=1)
    assert isinstance(doc, Document)
    assert (doc.text, doc.subset) == (text, subset)


@pytest.mark.parametrize("line,reason", [
    (b'{"text": "a\xff\xfe"}', "invalid_utf8"),
    (b'{"text": "a', "invalid_json"),
    (b'{"text": "a\x00b"}', "invalid_json"),  # a raw control character inside a string
    (b"[1, 2]", "not_a_record"),
    (b"42", "not_a_record"),
    (b'{"txt": "a"}', "text_missing"),
    (b"{}", "text_missing"),
    (b'{"text": 5}', "text_not_string"),
    (b'{"text": null}', "text_not_string"),
    (b'{"text": ["a", 1]}', "text_not_string"),
    (b'{"text": {"a": "b"}}', "text_not_string"),
    (b'{"text": "x\\ud800y"}', "lone_surrogate"),
    (b'{"text": "\\udc00\\ud800"}', "lone_surrogate"),
])
def test_rejections(line, reason):
    result = parse_line(line, line=1)
    assert isinstance(result, Rejected)
    assert result.reason == reason
    assert result.detail


@pytest.mark.parametrize("line,reason", [
    (b"", "blank_line"), (b"   \t", "blank_line"), (b'{"text": ""}', "empty_text")])
def test_filtered(line, reason):
    assert parse_line(line, line=1) == Filtered(reason)
