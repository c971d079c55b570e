"""parse.py: every record shape and every rejection reason, hand-written lines; the fast
parser (orjson) against the reference (``json``) on awkward and mutated lines."""

import random

import pytest

from pipeline.read.parse import (
    UNKNOWN_SUBSET,
    Document,
    Filtered,
    Rejected,
    parse_line,
    parse_line_exact,
)


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


# Lines where orjson and json could part: what json accepts and orjson does not, numbers
# orjson reads differently, and UTF-8 that only one of them might let through.
AWKWARD = [
    b'{"text": 123456789012345678901234567890}',  # orjson: a float; json: an int
    b"123456789012345678901234567890",
    b'{"text": NaN}', b"Infinity", b'{"text": 1e999}',
    b'{"text": "a", "text": "b"}',  # the last duplicate key wins in both
    b'{"text": "a", "meta": {"pile_set_name": "X", "pile_set_name": 7}}',
    b'\xef\xbb\xbf{"text": "a"}',  # a BOM inside a line (the stream's first is dropped earlier)
    b'{"text": "a"}\x00', b'{"text": "a"} \x0b', b'\x0c{"text": "a"}', b'{"text": "a"}\r',
    b'{"text": "\xed\xa0\x80"}',  # a UTF-16 surrogate encoded as UTF-8
    b'{"text": "\xc0\xaf"}',  # overlong
    b'{"text": "\xf4\x90\x80\x80"}',  # above U+10FFFF
    b'{"text": "\xe2\x82"}',  # cut in a character
    b'{"text": "\\ud800"}', b'"\\udfff"',
    b"[" * 1500 + b"]" * 1500,  # deeper than orjson's limit
    b'{"text": ' + b"[" * 1500 + b"]" * 1500 + b"}",
    b'{"text": "a\x7fb\xc2\x80"}',
    b'{"text": "\\u0000\\ud83d\\ude00", "meta": []}',
    b'{"text": -0, "meta": {}}', b"0123", b"[1,]", b'{"a": 1,}', b"'a'", b"tru",
]


@pytest.mark.parametrize("line", AWKWARD)
def test_fast_parser_matches_json(line):
    assert parse_line(line, line=4) == parse_line_exact(line, line=4)


def test_rejection_details_are_jsons():
    # orjson reads the number as a float: the detail must still name json's type.
    result = parse_line(b'{"text": 123456789012345678901234567890}', line=1)
    assert result == Rejected("text_not_string", '"text" is int')
    assert parse_line(b'{"text": "x\\ud800y"}', line=1).reason == "lone_surrogate"


def test_fast_parser_matches_json_on_mutated_lines():
    rng = random.Random(31)
    seeds = [b'{"text": "caf\xc3\xa9 \\u00e9\\n", "meta": {"pile_set_name": "Github"}}',
             b'{"text": ["a", "b\\t"], "meta": {"pile_set_name": 3}}', b'"bare \xe2\x82\xac"',
             b'{"meta": null, "text": "\xf0\x9f\x98\x80 \\ud83d\\ude00"}']
    alphabet = b'{}[]":,\\ u0123456789abcdefdDnNtrue\x00\x7f\x80\xbf\xc3\xe2\xed\xf0\xff'
    for _ in range(4000):
        line = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(line))
            action = rng.randrange(3)
            if action == 0:
                line[at] = rng.choice(alphabet)
            elif action == 1:
                line.insert(at, rng.choice(alphabet))
            else:
                del line[at]
        line = bytes(line)
        assert parse_line(line, line=2) == parse_line_exact(line, line=2), line
