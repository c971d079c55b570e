"""C4's rules (Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a Unified
Text-to-Text Transformer", Section 2.2), as TensorFlow Datasets' ``c4_utils.clean_page`` and
DataTrove's ``C4QualityFilter`` compute them.

C4 cleans a page line by line: it drops lines that do not end in terminal punctuation
(``c4_terminal_punct``), have fewer than 3 words (``c4_min_words_per_line``), a word over 1000
characters (``c4_max_word_length``), mention "javascript" (``c4_javascript``) or a cookie or
terms-of-use phrase (``c4_policy``); it removes the page if a kept line says "lorem ipsum"
(``c4_lorem_ipsum``) or holds a ``{`` (``c4_curly_bracket``), or if fewer than 5 sentences
remain (``c4_min_sentences``). pilepack takes the document-level decision only: a kept
document keeps all its lines (docs/filters.md says why); the line rules decide which lines the
sentence count and the two page rules look at.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pipeline.filters.failure import Failure, below

CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
END_PUNCTUATION = (".", "?", "!", '"', "'")
POLICY_SUBSTRINGS = ("terms of use", "privacy policy", "cookie policy", "uses cookies",
                     "use of cookies", "use cookies")
# A sentence ends at . ! or ? (closing quotes and brackets after it), then space, then what may
# start a sentence. NLTK's Punkt, the reference's splitter, also knows abbreviations; see
# docs/filters.md for how often the two differ.
_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*\s+(?=[\"'(\[]*[A-Z0-9])")


def count_sentences(line: str) -> int:
    """Sentences in one non-empty line.

    >>> count_sentences("It rained. We stayed in! Why? Because (as ever) it rained.")
    4
    """
    return len(_SENTENCE_END.findall(line)) + 1


# Long because: the reference's line loop, one rule per step in its order, is clearer whole.
def check(text: str, active: Mapping[str, float | None]) -> Failure | None:
    """The first C4 rule ``text`` fails, or None (``active``: rule -> threshold).

    >>> check("Short.", {"c4_min_sentences": 5, "c4_terminal_punct": None})
    Failure(rule='c4_min_sentences', value=1, threshold=5)
    """
    longest = active.get("c4_max_word_length")
    fewest = active.get("c4_min_words_per_line")
    punct, javascript, policy = (rule in active for rule in (
        "c4_terminal_punct", "c4_javascript", "c4_policy"))
    lorem, curly = "c4_lorem_ipsum" in active, "c4_curly_bracket" in active
    counting = "c4_min_sentences" in active
    sentences = 0
    for line in text.splitlines():
        line = line.strip()
        words = line.split()
        if longest is not None and any(len(word) > longest for word in words):
            continue
        line = CITATION.sub("", line)
        if punct and (not line.endswith(END_PUNCTUATION) or line.endswith("...")):
            continue
        if fewest is not None and len(words) < fewest:
            continue
        lower = line.lower()
        if lorem and "lorem ipsum" in lower:
            return Failure("c4_lorem_ipsum", 1, None)
        if javascript and "javascript" in lower:
            continue
        if curly and "{" in line:
            return Failure("c4_curly_bracket", 1, None)
        if policy and any(phrase in lower for phrase in POLICY_SUBSTRINGS):
            continue
        if counting and line:
            sentences += count_sentences(line)
    return below("c4_min_sentences", sentences, active) if counting else None
