"""A small input for ``--dedup=near --decontaminate``: planted near duplicates (pairs and a few
clusters of three) and planted evaluation passages, with two evaluation sets.

Built from ``datagen.near_duplicates`` (documents and copies at known Jaccard similarity) and
``datagen.contamination`` (passages planted in documents); the dataset report's tests and its
screenshot (``bench/report_screenshot.py``) use it.

    made = write_quality_input(directory, seed=0)
    # python -m pipeline.run --input=made.input --dedup=near
    #     --decontaminate=made.eval_sets[0],made.eval_sets[1] ...
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import random

from datagen import contamination, near_duplicates
from datagen.pile_files import pile_doc, write_jsonl_zst

NEAR_SUBSETS = ("Pile-CC", "Wikipedia (en)", "FreeLaw")
CONTAMINATED_SUBSETS = ("ArXiv", "Github")
EVAL_SET_NAMES = ("lambada", "piqa")


@dataclasses.dataclass(frozen=True)
class QualityInput:
    input: str  # the directory of Pile files
    eval_sets: tuple[str, ...]  # one JSON Lines file per evaluation set
    near_pairs: int  # planted pairs (any similarity)
    triples: int  # pairs given a third member (a near copy of the copy)
    contaminated: int  # documents holding an evaluation passage


def _third(rng: random.Random, text: str) -> str:
    """A near copy: one word in 100 replaced."""
    words = text.split(" ")
    for i in range(0, len(words), 100):
        words[i] = "".join(rng.choice("aeioukltr") for _ in range(6))
    return " ".join(words)


def write_quality_input(directory, *, seed: int = 0, documents: int = 120,
                        triples: int = 4, contaminated_documents: int = 60,
                        passages: int = 10, planted: int = 12) -> QualityInput:
    """Write ``directory/in/{00,01,02}.jsonl.zst`` and ``directory/eval/<set>.jsonl``."""
    directory = pathlib.Path(directory)
    (directory / "in").mkdir(parents=True, exist_ok=True)
    (directory / "eval").mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    texts, pairs = near_duplicates.generate(seed=seed, documents=documents)
    close = [copy for _, copy, jaccard, _ in pairs if jaccard >= 0.9][:triples]
    texts += [_third(rng, texts[copy]) for copy in close]
    rng.shuffle(texts)
    near = [pile_doc(text, NEAR_SUBSETS[i % len(NEAR_SUBSETS)]) for i, text in enumerate(texts)]
    corpus = contamination.make_corpus(seed=seed + 1, documents=contaminated_documents,
                                       passages=passages, planted=planted, min_words=13)
    dirty = [pile_doc(text, CONTAMINATED_SUBSETS[i % len(CONTAMINATED_SUBSETS)])
             for i, text in enumerate(corpus.documents)]
    write_jsonl_zst(directory / "in" / "00.jsonl.zst", near[::2])
    write_jsonl_zst(directory / "in" / "01.jsonl.zst", near[1::2])
    write_jsonl_zst(directory / "in" / "02.jsonl.zst", dirty)
    eval_sets = []
    for index, name in enumerate(EVAL_SET_NAMES):
        path = directory / "eval" / f"{name}.jsonl"
        mine = corpus.passages[index::len(EVAL_SET_NAMES)]
        path.write_text("".join(json.dumps({"text": p}) + "\n" for p in mine))
        eval_sets.append(str(path))
    return QualityInput(input=str(directory / "in"), eval_sets=tuple(eval_sets),
                        near_pairs=len(pairs), triples=len(close),
                        contaminated=len(corpus.plants))
