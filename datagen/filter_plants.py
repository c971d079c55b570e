"""Planted truth for the quality filters: clean English prose, and documents built from it to
break one rule each.

Clean documents are real prose: paragraphs of the docstrings and help topics the Python
installation ships (``datagen.sample.sources``' kind of text), re-flowed to one paragraph a
line with a blank line between, as web pages are; each document joins consecutive paragraphs
of a seeded shuffle until it has ``min_words``. ``plant(rule, text)`` changes a clean document
so that it breaks ``rule`` and, in the order the rules run (``pipeline.filters.rules``), no
rule before it: repeated paragraphs, lines or n-grams, words cut or glued, symbols, bullets,
stop words taken out, lines without punctuation, short lines, blank lines. Gopher's duplicate
5- to 10-gram rules have no plant yet: their thresholds are 0.01 apart, and a repeated span
breaks the shorter n-grams' rules first (tests/pipeline/filters/test_gopher.py checks their
measure against the reference's definition instead).
"""

from __future__ import annotations

import ast
import functools
import math
import os
import random
import re
import sysconfig
import textwrap

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_CODE = re.compile(r"[{}\[\]<>=_`|#*\\\"()@$%&~^]|\.\.\.|e\.g\.|i\.e\.|\d")
STOP_WORDS = ("the", "be", "to", "of", "and", "that", "have", "with")


def _prose(text: str) -> list[str]:
    """The prose paragraphs of a docstring or help text, each on one line."""
    found = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.split("\n")
        if any(line.startswith((" ", "\t", ">>>", "-", "*", "=", "+")) for line in lines):
            continue  # code, lists, tables, headings
        paragraph = " ".join(line.strip() for line in lines)
        marks = sum(paragraph.count(mark) for mark in ",;:/-'")
        if (len(paragraph.split()) >= 15 and paragraph.endswith(".")
                and marks <= 0.08 * len(paragraph.split())  # not a list of names
                and not _CODE.search(paragraph) and "lorem" not in paragraph.lower()
                and "javascript" not in paragraph.lower()):
            found.append(paragraph)
    return found


@functools.lru_cache(maxsize=1)
def prose_paragraphs() -> tuple[str, ...]:
    """Every prose paragraph of the standard library's docstrings and pydoc topics, each once,
    in a fixed order."""
    stdlib = sysconfig.get_paths()["stdlib"]
    texts = []
    for folder, dirs, files in os.walk(stdlib):
        dirs[:] = sorted(d for d in dirs if d not in ("test", "tests", "idle_test",
                                                       "site-packages", "__pycache__"))
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    tree = ast.parse(handle.read())
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                     ast.AsyncFunctionDef)):
                    texts.append(ast.get_docstring(node) or "")
                if name == "topics.py" and isinstance(node, ast.Dict):
                    texts += [v.value for v in node.values
                              if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    seen, paragraphs = set(), []
    for text in texts:
        for paragraph in _prose(text):
            if paragraph not in seen:
                seen.add(paragraph)
                paragraphs.append(paragraph)
    return tuple(paragraphs)


def clean_documents(*, count: int, seed: int = 0, min_words: int = 250) -> list[str]:
    """``count`` documents of real prose, paragraphs joined by a blank line."""
    paragraphs = list(prose_paragraphs())
    random.Random(seed).shuffle(paragraphs)
    documents, start = [], 0
    while len(documents) < count:
        picked, words = [], 0
        for i in range(len(paragraphs)):
            paragraph = paragraphs[(start + i) % len(paragraphs)]
            picked.append(paragraph)
            words += len(paragraph.split())
            if words >= min_words and len(picked) >= 4:
                break
        documents.append("\n\n".join(picked))
        start += 3  # the next document overlaps this one but is not equal to it
    return documents


def sentences(text: str) -> list[str]:
    return [s for p in text.split("\n\n") for s in _SENTENCE.split(p)]


def _words(text: str) -> list[str]:
    return [w.strip(".,;:!?'").lower() for w in text.split() if w.strip(".,;:!?'").isalpha()]


def _cycle(text: str, n: int, share: float) -> str:
    """``text`` and a paragraph repeating ``n`` of its words in turn, ``share`` of the whole."""
    distinct = list(dict.fromkeys(w for w in _words(text) if len(w) >= 5))[:n]
    unit = " ".join(distinct)
    repeats = math.ceil(share * len(text) / ((1 - share) * (len(unit) + 1)))
    return text + "\n\n" + " ".join([unit] * repeats) + "."


def _line_char_dup(text: str) -> str:
    """Sentences one a line; the longest again in a new paragraph, until over 20% of chars."""
    lines = sentences(text)
    longest = sorted(lines, key=len, reverse=True)
    extra, total = [], len("\n".join(lines))
    for line in longest:
        if sum(map(len, extra)) > 0.24 * (total + sum(map(len, extra))):
            break
        extra.append(line)
    body = "\n\n".join("\n".join(_SENTENCE.split(p)) for p in text.split("\n\n"))
    return body + "\n\n" + "\n".join(extra) + "\nThat is all."


def _wrap(paragraph: str, width: int) -> list[str]:
    return textwrap.wrap(paragraph, width=width, break_long_words=False)


def _five_sentences(text: str) -> tuple[str, list[str]]:
    """Paragraphs joined into one line until it has at least 6 sentences (C4's count), and the
    paragraphs left."""
    paragraphs = text.split("\n\n")
    for end in range(1, len(paragraphs) + 1):
        if len(_SENTENCE.split(" ".join(paragraphs[:end]))) >= 6:
            break
    return " ".join(paragraphs[:end]), paragraphs[end:]


# Long because: one small builder a rule, side by side, so that each plant reads beside the rest.
def _plants() -> dict:
    def hashes(text):
        words = text.split(" ")
        return " ".join("#" + w if i % 3 == 0 else w for i, w in enumerate(words))

    def ellipses(text):
        words = text.split(" ")
        return " ".join(w + "..." if i % 4 == 3 else w for i, w in enumerate(words))

    def numbers(text):
        words = text.split(" ")
        return " ".join(f"{w} {1000 + i}" if i % 2 else w for i, w in enumerate(words))

    def no_stop_words(text):
        return " ".join(w for w in text.split(" ") if w not in STOP_WORDS)

    def short_words(text):
        return " ".join(" ".join(textwrap.wrap(w, 2)) for w in text.split(" "))

    def long_words(text):
        words = text.split(" ")
        return " ".join("".join(words[i:i + 3]) for i in range(0, len(words), 3))

    def paragraph_dup(text):
        paragraphs = text.split("\n\n")
        shortest = min(paragraphs, key=len)
        return "\n\n".join(paragraphs + [shortest] * (len(paragraphs) // 2 + 1))

    def paragraph_char_dup(text):
        paragraphs = text.split("\n\n")
        longest = max(paragraphs, key=len)
        others = [p for p in paragraphs if p != longest][:2]
        return "\n\n".join([longest, *others, longest])

    def line_dup(text):
        shortest = min(sentences(text), key=len)
        return text + "\n\n" + "\n".join([shortest] * (len(text.split("\n\n")) + 3))

    def min_words(text):
        # Gopher's top n-gram share of so short a text is its first n-gram's (each occurs
        # once): start where the first four words are short, so that only the length fails.
        # Nor may a 3-gram repeat in so few words.
        words = text.split()

        def fits(i):
            window = words[i:i + 45]
            grams = [tuple(window[k:k + 3]) for k in range(len(window) - 2)]
            return len(" ".join(window[:4])) <= 22 and len(set(grams)) == len(grams)

        start = next((i for i in range(len(words) - 45) if fits(i)), 0)
        return " ".join(words[start:start + 45])

    def bullets(text):
        return "\n".join("• " + s for s in sentences(text))

    def ellipsis_lines(text):
        return "\n\n".join(p[:-1] + "..." for p in text.split("\n\n"))

    def lorem(text):
        return text + ("\n\nLorem ipsum dolor sit amet, consectetur adipiscing elit, sed do "
                       "eiusmod tempor incididunt ut labore et dolore magna aliqua.")

    def curly(text):
        paragraphs = text.split("\n\n")
        return "\n\n".join(paragraphs[:-1] + [paragraphs[-1][:-1] + " {see the note}."])

    def no_punct(text):
        return "\n\n".join(p.rstrip(".") for p in text.split("\n\n"))

    def few_punct_lines(text):
        head, left = _five_sentences(text)
        rest = [line.rstrip(".") for p in left for line in _wrap(p, 40)]
        return "\n".join([head, *rest])

    def short_lines(text):
        head, left = _five_sentences(text)
        rest = [line for s in sentences("\n\n".join(left)) for line in _wrap(s, 26)]
        return "\n".join([head, *rest])

    def char_dup(text):
        # over FineWeb's 1% of characters, under the 10% of Gopher's duplicate 10-grams
        candidates = [s for s in sentences(text) if len(s) >= 0.02 * len(text)]
        shortest = min(candidates, key=len)
        return text + "\n\n" + shortest + "\n\n" + shortest

    def list_ratio(text):
        return ("\n" * 12).join(sentences(text))

    plants = {
        "gopher_dup_para_frac": paragraph_dup,
        "gopher_dup_para_char_frac": paragraph_char_dup,
        "gopher_dup_line_frac": line_dup,
        "gopher_dup_line_char_frac": _line_char_dup,
        "gopher_top_2gram": lambda t: _cycle(t, 2, 0.3),
        "gopher_top_3gram": lambda t: _cycle(t, 3, 0.23),
        "gopher_top_4gram": lambda t: _cycle(t, 4, 0.19),
        "gopher_min_words": min_words,
        "gopher_min_mean_word_length": short_words,
        "gopher_max_mean_word_length": long_words,
        "gopher_hash_ratio": hashes,
        "gopher_ellipsis_ratio": ellipses,
        "gopher_bullet_lines": bullets,
        "gopher_ellipsis_lines": ellipsis_lines,
        "gopher_alpha_words": numbers,
        "gopher_stop_words": no_stop_words,
        "c4_lorem_ipsum": lorem,
        "c4_curly_bracket": curly,
        "c4_min_sentences": no_punct,
        "fineweb_line_punct": few_punct_lines,
        "fineweb_short_lines": short_lines,
        "fineweb_char_dup": char_dup,
        "fineweb_list_ratio": list_ratio,
    }
    return plants


PLANTS = _plants()


def plant(rule: str, text: str) -> str:
    """``text`` (a clean document) changed to break ``rule`` first."""
    return PLANTS[rule](text)
