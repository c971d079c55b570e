"""The text units the rules count: words, lines, duplicates (shared by every rule family).

The reference implementation (DataTrove) splits English words with NLTK's ``word_tokenize``
(Punkt sentences, then the Treebank rules); ``split_words`` applies the Treebank rules to the
whole text, splitting a period off before whitespace where Punkt would end a sentence, without
NLTK or its model files. ``bench/filters_reference.py`` measures the differences on real text.
"""

from __future__ import annotations

import functools
import re

# NLTK's Treebank word tokenizer (nltk.tokenize.destructive.NLTKWordTokenizer), its rules in
# its order: punctuation is padded with spaces, then the text is split at whitespace. A period
# is split off where it ends a sentence (before whitespace), as Punkt's sentence split and
# Treebank's final-period rule do together.
_TREEBANK = tuple((re.compile(pattern), replacement, needles) for pattern, replacement, needles in (
    (r'^"', "``", '"'), (r"(``)", r" \1 ", "`"), (r'([ \(\[{<])("|\'{2})', r"\1 `` ", "\"'"),
    # Treebank's ([:,])([^\d]) as lookarounds: a literal replacement is made in C.
    (r",(?=\D)", " , ", ","), (r":(?=\D)", " : ", ":"), (r"([:,])$", r" \1 ", ":,"),
    (r"\.{2,}", r" \g<0> ", "."), (r"[;@#$%&]", r" \g<0> ", ";@#$%&"),
    (r'([^\.])(\.)([\]\)}>"\']*)\s*$', r"\1 \2\3 ", "."),
    (r"(?<=[^.\s])\.(?=\s)", " . ", "."), (r"\?", " ? ", "?"), (r"!", " ! ", "!"),
    (r"([^'])' ", r"\1 ' ", "'"), (r"\*", " * ", "*"),
    (r"[\]\[\(\)\{\}\<\>]", r" \g<0> ", "[](){}<>"), (r"--", " -- ", "-"),
    (r'"', " '' ", '"'), (r"(\S)(\'\')", r"\1 \2 ", "'"),
    (r"([^' ])('[sS]|'[mM]|'[dD]|') ", r"\1 \2 ", "'"),
    (r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", r"\1 \2 ", "'"),
    (r"(?i)\b(can)(not)\b", r" \1 \2 ", "nN"),
))

# DataTrove's PUNCTUATION (datatrove.utils.text): a word made only of these is a symbol.
_PUNCTUATION = ("!/—”:％１〈&(、━\\【#%「」，】；+^]~“《„';’{|∶´[=-`*．（–？！：$～«〉,><》)?）。…@_.\"}►»"
                + "".join(map(chr, (x for a, b in ((0, 9), (11, 13), (13, 32), (127, 160))
                                    for x in range(a, b)))))
# Unicode's sentence terminals, as DataTrove's TERMINAL_PUNCTUATION lists them.
TERMINAL_PUNCTUATION = tuple(
    "!.?։؝؞؟۔܀܁܂߹࠷࠹࠽࠾।॥၊။።፧፨᙮᜵᜶។៕៖៙៚᠃᠉᥄᥅᪨᪩᪪᪫᭚᭛᭞᭟᭽᭾᰻᰼᱾᱿‼‽⁇⁈⁉⸮⸼⹓⹔。꓿꘎꘏꛳꛷꡶꡷꣎꣏꤯꧈꧉꩝꩞꩟꫰꫱꯫﹒﹖﹗！．？｡"
    "𐩖𐩗𐽕𐽖𐽗𐽘𐽙𐾆𐾇𐾈𐾉𑁇𑁈𑂾𑂿𑃀𑃁𑅁𑅂𑅃𑇅𑇆𑇍𑇞𑇟𑈸𑈹𑈻𑈼𑊩𑑋𑑌𑗂𑗃𑗉𑗊𑗋𑗌𑗍𑗎𑗏𑗐𑗑𑗒𑗓𑗔𑗕𑗖𑗗𑙁𑙂𑜼𑜽𑜾𑥄𑥆𑩂𑩃𑪛𑪜𑱁𑱂𑻷𑻸\U00011f43\U00011f44"
    "𖩮𖩯𖫵𖬷𖬸𖭄𖺘𛲟𝪈")
PUNCTUATION_SET = frozenset(_PUNCTUATION) | frozenset(TERMINAL_PUNCTUATION)


def split_words(text: str) -> list[str]:
    """Words and punctuation tokens, in order.

    >>> split_words("We don't know... yet.")
    ['We', 'do', "n't", 'know', '...', 'yet', '.']
    """
    for pattern, replacement, needles in _TREEBANK[:-5]:
        if any(needle in text for needle in needles):  # a rule without its characters: skip
            text = pattern.sub(replacement, text)
    text = f" {text} "  # Treebank's ending rules look for a space after a word
    for pattern, replacement, needles in _TREEBANK[-5:]:
        if any(needle in text for needle in needles):
            text = pattern.sub(replacement, text)
    return text.split()


# Bounded caches: a word's answers are looked up, not recomputed, for the commonest words.
@functools.lru_cache(maxsize=1 << 16)
def is_symbol(word: str) -> bool:
    """Whether ``word`` is made only of punctuation (Gopher counts the other words)."""
    return all(ch in PUNCTUATION_SET for ch in word)


@functools.lru_cache(maxsize=1 << 16)
def has_letter(word: str) -> bool:
    """Whether ``word`` holds an alphabetic character."""
    return any(ch.isalpha() for ch in word)


def find_duplicates(items: list[str]) -> tuple[int, int]:
    """(items equal to an earlier item, their characters): Gopher's duplicate lines and
    paragraphs, FineWeb's duplicate lines.

    >>> find_duplicates(["a", "bb", "a", "bb", "c"])
    (2, 3)
    """
    seen: set[str] = set()
    count = chars = 0
    for item in items:
        if item in seen:
            count += 1
            chars += len(item)
        else:
            seen.add(item)
    return count, chars
