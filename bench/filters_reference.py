"""pilepack's quality filters against DataTrove's, document by document, on real text.

    /path/to/venv-with-datatrove/bin/python -m bench.filters_reference \\
        --input='corpus/dev/*.jsonl.zst' [--limit=0]

Run with an interpreter that has ``datatrove`` and ``nltk`` installed (not pilepack's
dependencies: a separate virtual environment; this checkout is put first on ``sys.path``).
Every document of ``--input`` is judged by each family twice, with every rule on (no profile):
by ``pipeline.filters`` and by DataTrove's ``GopherRepetitionFilter``, ``GopherQualityFilter``,
``C4QualityFilter`` and ``FineWebQualityFilter`` with their default thresholds. DataTrove
splits words with NLTK's ``word_tokenize``, which needs the Punkt model (a download); where it
is absent, NLTK's Treebank word tokenizer runs on sentences split at ``. ! ?`` + space, and C4's
sentences are counted the same way (said in the output). Reported per family: documents, how
many each side removes, and the disagreements, with the reason each side gives and, with
``--show``, their first characters.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from pipeline.filters import c4, fineweb, gopher
from pipeline.filters.rules import FAMILIES, RULES
from pipeline.filters.words import split_words

_SENTENCES = re.compile(r"(?<=[.!?])\s+")


def _patch_tokenizers() -> str:
    """Make DataTrove's word and sentence splitting work offline; say which is used."""
    import nltk
    from datatrove.pipeline.filters import (
        c4_filters,
        fineweb_quality_filter,
        gopher_quality_filter,
        gopher_repetition_filter,
    )
    try:
        nltk.data.find("tokenizers/punkt_tab/english")
        return "nltk word_tokenize (Punkt model present)"
    except LookupError:
        pass
    from nltk.tokenize.destructive import NLTKWordTokenizer

    treebank = NLTKWordTokenizer()

    def words(text, language=None):
        return [w for s in _SENTENCES.split(text) for w in treebank.tokenize(s)]

    def sentences(text, language=None):
        return [s for s in _SENTENCES.split(text) if s.strip()]

    for module in (gopher_quality_filter, gopher_repetition_filter, fineweb_quality_filter):
        module.split_into_words = words
    c4_filters.split_into_sentences = sentences
    return "NLTK Treebank words on sentences split at '. ! ?' + space (no Punkt model here)"


def _documents(pattern: str, limit: int):
    import zstandard

    count = 0
    for path in sorted(glob.glob(pattern)):
        with open(path, "rb") as handle:
            data = zstandard.ZstdDecompressor().stream_reader(handle).read()
        for line in data.decode("utf-8").splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            yield record["meta"].get("pile_set_name", ""), record["text"]
            count += 1
            if limit and count >= limit:
                return


def _ours(family: str, text: str) -> str | None:
    active = {r.name: r.threshold for r in RULES.values() if r.family == family}
    words = split_words(text)
    found = {"gopher_repetition": lambda: gopher.repetition(text, words, active),
             "gopher_quality": lambda: gopher.quality(text, words, active),
             "c4": lambda: c4.check(text, active),
             "fineweb": lambda: fineweb.check(text, words, active)}[family]()
    return found.rule if found else None


def _theirs(filters: dict, family: str, text: str) -> str | None:
    from datatrove.data import Document

    result = filters[family].filter(Document(text=text, id="0"))
    if result is True or (isinstance(result, tuple) and result[0]):
        return None
    return result[1] if isinstance(result, tuple) else "removed"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--limit", type=int, default=0, help="documents; 0 = all")
    parser.add_argument("--show", type=int, default=3, help="disagreements shown per family")
    args = parser.parse_args(argv)
    how = _patch_tokenizers()
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
    )
    filters = {"gopher_repetition": GopherRepetitionFilter(),
               "gopher_quality": GopherQualityFilter(), "c4": C4QualityFilter(),
               "fineweb": FineWebQualityFilter()}
    families = [f for name in FAMILIES for f in FAMILIES[name]]
    totals = {f: collections.Counter() for f in families}
    shown = collections.Counter()
    print(f"reference words: {how}")
    for subset, text in _documents(args.input, args.limit):
        for family in families:
            ours, theirs = _ours(family, text), _theirs(filters, family, text)
            counts = totals[family]
            counts["documents"] += 1
            counts["ours_removed"] += ours is not None
            counts["theirs_removed"] += theirs is not None
            if (ours is None) != (theirs is None):
                counts["disagree"] += 1
                counts[f"disagree {ours} / {theirs}"] += 1
                if shown[family] < args.show:
                    shown[family] += 1
                    print(f"  {family} [{subset}] ours={ours} datatrove={theirs}: "
                          f"{text[:100]!r}")
    for family, counts in totals.items():
        n = counts["documents"]
        print(f"{family}: {n} documents, pilepack removes {counts['ours_removed']}, DataTrove "
              f"{counts['theirs_removed']}, disagree on {counts['disagree']} "
              f"({100 * counts['disagree'] / max(n, 1):.2f}%)")
        for key, value in sorted(counts.items()):
            if key.startswith("disagree "):
                print(f"    {key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
