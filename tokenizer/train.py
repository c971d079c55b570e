"""Train a lossless SentencePiece model from a stream of texts and publish it.

Texts are streamed to SentencePiece through ``sentence_iterator`` after being cut at word
boundaries into pieces of at most ``TrainOptions.max_sentence_length`` bytes (SentencePiece
silently skips longer sentences; the BPE trainer splits sentences into words anyway, so cutting
between words changes nothing it counts). This module holds no text; SentencePiece itself keeps
every sentence it trains on in memory, or an ``input_sentence_size`` sample of them.
"""

from __future__ import annotations

import dataclasses
import io
import re
import time
from collections.abc import Iterable, Iterator

import sentencepiece as spm

from common import storage
from common.errors import ConfigError
from tokenizer.boundaries import cut_text
from tokenizer.model_info import fingerprint
from tokenizer.spec import MODEL_FILENAME, VOCAB_FILENAME, TrainOptions

_TOO_SMALL = re.compile(r"Vocabulary size is smaller than required_chars\. (\d+) vs (\d+)")
_TOO_LARGE = re.compile(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)")


@dataclasses.dataclass(frozen=True)
class TrainedTokenizer:
    """A published model.

    Attributes:
      model_path: Where ``tokenizer.model`` was written (local path or URL).
      vocab_path: Where ``tokenizer.vocab`` was written. Pieces may contain raw newlines and
        tabs, so read pieces from the model, not by splitting this file into lines.
      sha256: Hex digest of the model file (``fingerprint``); record it with the dataset.
      vocab_size: The real vocabulary size; can be below the requested one on a small corpus.
      train_seconds: Wall time SentencePiece spent, reading the texts included.
      num_texts: Texts consumed.
      num_bytes: UTF-8 bytes of text consumed.
    """

    model_path: str
    vocab_path: str
    sha256: str
    vocab_size: int
    train_seconds: float
    num_texts: int
    num_bytes: int


def vocab_text(processor: spm.SentencePieceProcessor) -> str:
    """SentencePiece's ``.vocab`` format: one ``piece<TAB>score`` line per id, in id order.

    Pieces are written raw, as SentencePiece does, so a piece holding a newline or a tab
    (``"\\n\\t"`` is a common one in code) spans lines: parse the model, not this file.
    """
    return "".join(
        f"{processor.id_to_piece(i)}\t{processor.get_score(i):g}\n"
        for i in range(processor.get_piece_size())
    )


class _Sentences:
    """Iterator of training sentences that counts its input and keeps its own exceptions.

    SentencePiece turns an exception raised inside ``sentence_iterator`` into a RuntimeError
    carrying only its text; keeping the original lets ``train_from_texts`` re-raise it as is.
    """

    def __init__(self, texts: Iterable[str], *, max_bytes: int):
        self._pieces = self._generate(texts, max_bytes)
        self.num_texts = 0
        self.num_bytes = 0
        self.error: BaseException | None = None

    def _generate(self, texts: Iterable[str], max_bytes: int) -> Iterator[str]:
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(
                    f"text #{self.num_texts} is {type(text).__name__}, not str; decode it first"
                )
            self.num_texts += 1
            self.num_bytes += len(text.encode("utf-8"))
            yield from cut_text(text, max_bytes=max_bytes)

    def __iter__(self) -> _Sentences:
        return self

    def __next__(self) -> str:
        try:
            return next(self._pieces)
        except StopIteration:
            raise
        except BaseException as err:
            self.error = err
            raise


def _as_config_error(err: RuntimeError, *, options: TrainOptions) -> ConfigError:
    """Translate a SentencePiece training failure into what to change."""
    message = str(err)
    if match := _TOO_SMALL.search(message):
        return ConfigError(
            f"vocab_size={options.vocab_size} is too small for this corpus: its characters "
            f"need at least {match.group(2)} pieces (4 reserved, 256 bytes, the characters "
            f"covered at character_coverage={options.character_coverage}); raise --vocab_size "
            f"to at least {match.group(2)} or lower --character_coverage"
        )
    if match := _TOO_LARGE.search(message):
        return ConfigError(
            f"vocab_size={options.vocab_size} is too large for this corpus: at most "
            f"{match.group(2)} pieces can be learned from it; lower --vocab_size to "
            f"{match.group(2)} or less, or train on more text"
        )
    if "sentences_.empty()" in message:
        return ConfigError(
            "no training text: every text was empty; check the corpus path and the --input pattern"
        )
    return ConfigError(f"SentencePiece training failed with {options}: {message}")


def train_from_texts(
    *, texts: Iterable[str], output_dir: str, options: TrainOptions
) -> TrainedTokenizer:
    """Train a model on ``texts`` and write ``tokenizer.model`` and ``tokenizer.vocab``.

    Trains in memory, then writes both files to ``output_dir`` with
    ``common.storage.atomic_open`` (vocab first, the model last), so ``output_dir`` may be a
    local path, a mount or a URL such as ``s3://bucket/tokenizer``. The same texts and options
    give the same model bytes, hence the same fingerprint.

    Args:
      texts: Documents, streamed once.
      output_dir: Directory or URL prefix for the two files.
      options: Training options; the lossless settings come from ``tokenizer.spec``.

    Returns:
      Paths, fingerprint and real vocabulary size of the published model.

    Raises:
      ValueError: SentencePiece rejected the options for this corpus; the message says which
        flag to change.
      Any exception ``texts`` raises, unchanged.
    """
    sentences = _Sentences(texts, max_bytes=options.max_sentence_length)
    # In memory (model_writer), not through model_prefix: SentencePiece would record the
    # temporary path in the model, and the same corpus would give a different fingerprint.
    writer = io.BytesIO()
    spm.set_random_generator_seed(options.seed)
    start = time.perf_counter()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=sentences,
            model_writer=writer,
            minloglevel=2,  # errors only: INFO/WARNING repeat a line per NUL and per "\n" piece
            **options.to_trainer_kwargs(),
        )
    except (RuntimeError, ValueError) as err:
        if sentences.error is not None:
            raise sentences.error from None
        raise _as_config_error(err, options=options) from err
    train_seconds = time.perf_counter() - start
    model_bytes = writer.getvalue()

    processor = spm.SentencePieceProcessor(model_proto=model_bytes)
    model_path = storage.join(output_dir, MODEL_FILENAME)
    vocab_path = storage.join(output_dir, VOCAB_FILENAME)
    with storage.atomic_open(vocab_path, "wb") as handle:
        handle.write(vocab_text(processor).encode("utf-8"))
    with storage.atomic_open(model_path, "wb") as handle:
        handle.write(model_bytes)
    return TrainedTokenizer(
        model_path=model_path,
        vocab_path=vocab_path,
        sha256=fingerprint(model_bytes),
        vocab_size=processor.vocab_size(),
        train_seconds=train_seconds,
        num_texts=sentences.num_texts,
        num_bytes=sentences.num_bytes,
    )
