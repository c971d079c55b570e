"""A training corpus with evaluation passages planted in it, and the truth of where.

Every text is random words drawn from a Zipf-distributed vocabulary of made-up words, so a
clean document shares no 13-word run with an evaluation passage by accident (the likeliest
13-gram has a chance of about 1e-13). A planted document holds one evaluation passage, whole or
a slice of at least ``min_words`` words, rewritten the ways ``--decontaminate`` must see
through: words in upper or title case, punctuation stuck to some, and the spaces between them
replaced by runs of spaces, tabs and newlines. The words around a planted slice differ from
the passage's own neighbours, so the overlap is exactly the planted words.

    corpus = make_corpus(seed=0, documents=200, passages=50, planted=40, min_words=13)
    corpus.plants[0].span  # (start, end) characters of the planted words in its document
"""

from __future__ import annotations

import dataclasses
import random

_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_GAPS = (" ", "  ", "\n", "\t", " \n ", "\r\n")
_MARKS = (",", ".", ";", "!", "?", ")", '"')


@dataclasses.dataclass(frozen=True)
class Plant:
    document: int  # index in ``Corpus.documents``
    passage: int  # index in ``Corpus.passages``
    words: int  # passage words planted
    span: tuple[int, int]  # characters of the document the planted words take


@dataclasses.dataclass(frozen=True)
class Corpus:
    documents: tuple[str, ...]
    passages: tuple[str, ...]
    plants: tuple[Plant, ...]  # at most one per document, in document order

    def redacted(self, index: int) -> str:
        """The document with its planted words cut (the whitespace around them kept)."""
        text = self.documents[index]
        for plant in self.plants:
            if plant.document == index:
                start, end = plant.span
                return text[:start] + text[end:]
        return text


def vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_LETTERS) for _ in range(rng.randint(3, 9))))
    return sorted(words)


def _zipf(rng: random.Random, words: list[str], count: int) -> list[str]:
    weights = [1.0 / (rank + 1) ** 1.1 for rank in range(len(words))]
    return rng.choices(words, weights=weights, k=count)


def _disguise(rng: random.Random, words: list[str]) -> str:
    """The words, recased, some with punctuation, joined by assorted whitespace."""
    out = []
    for word in words:
        word = rng.choice((word, word, word.upper(), word.title()))
        if rng.random() < 0.15:
            word += rng.choice(_MARKS)
        out.append(word)
    text = out[0]
    for word in out[1:]:
        text += rng.choice(_GAPS) + word
    return text


def _neighbour(rng: random.Random, vocab: list[str], avoid: set[str]) -> str:
    while True:
        word = rng.choice(vocab)
        if word not in avoid:
            return word


def make_corpus(*, seed: int, documents: int, passages: int, planted: int, min_words: int,
                vocab_size: int = 20000, short_passages: int = 0) -> Corpus:
    """``documents`` training texts (100-300 words), ``passages`` evaluation passages (20-60
    words, plus ``short_passages`` of fewer than ``min_words``), and ``planted`` of the
    documents (spread evenly) each holding one passage, whole or a slice of >= ``min_words``."""
    rng = random.Random(seed)
    vocab = vocabulary(rng, vocab_size)
    passage_words = [_zipf(rng, vocab, rng.randint(20, 60)) for _ in range(passages)]
    shorts = [_zipf(rng, vocab, rng.randint(1, min_words - 1)) for _ in range(short_passages)]
    every = max(1, documents // max(planted, 1))
    texts, plants = [], []
    for index in range(documents):
        words = _zipf(rng, vocab, rng.randint(100, 300))
        if index % every or len(plants) >= planted:
            texts.append(" ".join(words))
            continue
        which = len(plants) % passages
        source = passage_words[which]
        size = rng.choice((len(source), rng.randint(min_words, len(source))))
        first = rng.randint(0, len(source) - size)
        at = rng.randint(1, len(words) - 1)
        before = words[:at - 1] + [_neighbour(rng, vocab, set(source[max(first - 1, 0):first]))]
        after = [_neighbour(rng, vocab, set(source[first + size:first + size + 1]))] + words[at:]
        head = " ".join(before) + " "
        body = _disguise(rng, source[first:first + size])
        texts.append(head + body + " " + " ".join(after))
        plants.append(Plant(document=index, passage=which, words=size,
                            span=(len(head), len(head) + len(body))))
    all_passages = [" ".join(words) for words in passage_words + shorts]
    return Corpus(documents=tuple(texts), passages=tuple(all_passages), plants=tuple(plants))
