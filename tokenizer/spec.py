"""Reserved token ids and the SentencePiece trainer options that make tokenization lossless.

Reserved ids (the first four of every vocabulary this project trains):

* ``PAD_ID = 0`` ``<pad>``: fills the tail of a packed sequence; never produced by ``encode``.
* ``EOS_ID = 1`` ``</s>``: separates documents in the packed stream (``EOS d1 EOS d2 ... EOS``,
  see ``pipeline/write/pack.py``).
* ``UNK_ID = 2`` ``<unk>``: SentencePiece requires one; with byte fallback ``encode`` never
  emits it.
* ``BOS_ID = 3`` ``<s>``: reserved for trainers that want it; the pipeline does not emit it.

The 256 byte pieces ``<0x00>`` .. ``<0xFF>`` follow at ids 4..259, then the learned pieces.

Lossless means ``decode(encode(text)) == text`` for every UTF-8-encodable string (code, runs of
spaces, tabs, ``\\r\\n``, NUL, emoji, any script). SentencePiece's defaults are not lossless: they
apply NFKC, fold runs of whitespace and add a dummy leading space; ``FIXED_TRAINER_KWARGS`` turns
all of that off. One character cannot round-trip: U+2581 ``▁`` (SentencePiece's own space symbol)
decodes to a plain space, because SentencePiece escapes ``' '`` to ``'▁'`` before the model sees
the text and no option changes that symbol (see ``KNOWN_LOSSY_CHARS``); the encoder backends
(``tokenizer.backends``) therefore encode a literal U+2581 as its three byte pieces, which do.

Newlines, tabs, ``\\r`` and NUL need no special handling: in ``sentence_iterator`` input a
sentence may contain them, ``\\n``/``\\t``/``\\r`` are learned like any character (pieces such as
``":\\n"`` or ``"\\n\\t\\t"`` appear), and NUL, which SentencePiece never puts in a piece, encodes
as the byte piece ``<0x00>``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from common.errors import ConfigError

# File names of a published tokenizer (beside a dataset's shards, or from training alone).
MODEL_FILENAME = "tokenizer.model"
VOCAB_FILENAME = "tokenizer.vocab"  # SentencePiece's "piece<TAB>score" lines, for people to read

DEFAULT_VOCAB_SIZE = 32000

# SentencePiece's space symbol: ' ' is escaped to it before the model sees the text.
SPACE_SYMBOL = "\u2581"

PAD_ID = 0
EOS_ID = 1
UNK_ID = 2
BOS_ID = 3
SPECIAL_IDS = {"pad": PAD_ID, "eos": EOS_ID, "unk": UNK_ID, "bos": BOS_ID}

# Pieces every vocabulary contains before any learned piece: 4 reserved + 256 bytes.
NUM_BYTE_PIECES = 256
MIN_VOCAB_SIZE = len(SPECIAL_IDS) + NUM_BYTE_PIECES + 1

# Characters that do not survive plain ``decode(encode(text))`` whatever the options (see above).
KNOWN_LOSSY_CHARS = (SPACE_SYMBOL,)

MODEL_TYPES = ("bpe", "unigram")

# Options that make the tokenizer lossless (and keep CachedEncoder's fast path valid). Not
# configurable on purpose: changing any of them breaks the round trip the pipeline relies on.
FIXED_TRAINER_KWARGS: dict[str, Any] = {
    # NFKC would rewrite "ﬁ" -> "fi", full-width "Ａ" -> "A": identity keeps the text as is.
    "normalization_rule_name": "identity",
    # The default folds runs of spaces and strips leading/trailing ones: fatal for code.
    "remove_extra_whitespaces": False,
    # The default prepends a space that decode strips again: "x" and " x" would collide.
    "add_dummy_prefix": False,
    # Characters outside the vocabulary become their UTF-8 bytes instead of <unk>.
    "byte_fallback": True,
    # Pieces never span a space-word boundary: faster training, and CachedEncoder's cache works.
    "split_by_whitespace": True,
    # Runs of spaces (indentation) may become single pieces such as "▁▁▁▁".
    "allow_whitespace_only_pieces": True,
    # Every digit is its own token: consistent number tokenization, no piece per number.
    "split_digits": True,
    "pad_id": PAD_ID,
    "eos_id": EOS_ID,
    "unk_id": UNK_ID,
    "bos_id": BOS_ID,
    # A small corpus with a large vocab_size still trains; the real size is reported instead.
    "hard_vocab_limit": False,
}


@dataclasses.dataclass(frozen=True)
class TrainOptions:
    """Tunable SentencePiece training options; the lossless ones are fixed (see module doc).

    Attributes:
      vocab_size: Upper bound on the vocabulary size (the real size can be smaller on a small
        corpus); at least ``MIN_VOCAB_SIZE`` plus the characters the corpus needs.
      model_type: "bpe" (CachedEncoder's fast path needs it) or "unigram".
      character_coverage: Share of characters covered by whole-character pieces; the rarest
        rest are spelled with byte pieces.
      seed: Passed to ``sentencepiece.set_random_generator_seed``. Without sampling
        (``input_sentence_size=0``) training is deterministic anyway: the same texts give the
        same model bytes. With sampling, SentencePiece 0.2.3 draws a different sample in each
        process whatever the seed; sample upstream for a reproducible model.
      num_threads: Trainer threads.
      max_sentence_length: Longest training sentence, in UTF-8 bytes. SentencePiece silently
        skips longer ones, so ``train_from_texts`` cuts texts at word boundaries to this size.
      input_sentence_size: Sample this many sentences (pieces of texts) for training; 0 = all
        (see ``seed``); SentencePiece needs more than 100.
      max_sentencepiece_length: Longest piece, in characters.
    """

    vocab_size: int = DEFAULT_VOCAB_SIZE
    model_type: str = "bpe"
    character_coverage: float = 0.9999
    seed: int = 0
    num_threads: int = 2
    max_sentence_length: int = 1 << 16
    input_sentence_size: int = 0
    max_sentencepiece_length: int = 16

    def __post_init__(self):
        if self.vocab_size < MIN_VOCAB_SIZE:
            raise ConfigError(
                f"vocab_size={self.vocab_size} is too small: {len(SPECIAL_IDS)} reserved ids and "
                f"{NUM_BYTE_PIECES} byte pieces come first; set --vocab_size to at least "
                f"{MIN_VOCAB_SIZE} (realistically several thousand)"
            )
        if self.model_type not in MODEL_TYPES:
            raise ConfigError(
                f"model_type={self.model_type!r} is not supported; use one of {MODEL_TYPES}"
            )
        if not 0.0 < self.character_coverage <= 1.0:
            raise ConfigError(
                f"character_coverage={self.character_coverage} must be in (0, 1]; e.g. 0.9999"
            )
        if self.num_threads < 1:
            raise ConfigError(f"num_threads={self.num_threads} must be at least 1")
        if self.max_sentence_length < 64:
            raise ConfigError(
                f"max_sentence_length={self.max_sentence_length} bytes is too short to hold "
                "real text; use e.g. 65536"
            )
        if self.input_sentence_size < 0 or 0 < self.input_sentence_size <= 100:
            raise ConfigError(
                f"input_sentence_size={self.input_sentence_size} must be 0 (all) or above 100 "
                "(SentencePiece's minimum sample)"
            )
        if self.max_sentencepiece_length < 1:
            raise ConfigError(
                f"max_sentencepiece_length={self.max_sentencepiece_length} must be positive"
            )

    def to_trainer_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``sentencepiece.SentencePieceTrainer.train``.

        ``seed`` is not among them: SentencePiece takes it through
        ``sentencepiece.set_random_generator_seed`` (``train_from_texts`` calls it).
        """
        return {
            **FIXED_TRAINER_KWARGS,
            "model_type": self.model_type,
            "vocab_size": self.vocab_size,
            "character_coverage": self.character_coverage,
            "num_threads": self.num_threads,
            "max_sentence_length": self.max_sentence_length,
            "input_sentence_size": self.input_sentence_size,
            # Shuffling only matters when sampling; it makes the sample uniform.
            "shuffle_input_sentence": True,
            "max_sentencepiece_length": self.max_sentencepiece_length,
        }
