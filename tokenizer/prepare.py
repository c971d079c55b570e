"""Make the split's tokenizer available next to its shards: copy a given model, or train one.

Either way the dataset directory ends up self-contained, with ``tokenizer.model`` (and
``tokenizer.vocab`` when trained) whose sha256 the manifest records.
"""

from __future__ import annotations

import dataclasses
import logging
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from common import storage
from schemas.records import token_dtype_for_vocab

log = logging.getLogger(__name__)

MODEL_NAME = "tokenizer.model"
SAMPLE_DIR = "tokenizer_sample"
MAX_PIECE_BYTES = 4096


class TokenizerError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class TokenizerInfo:
    path: str
    sha256: str
    vocab_size: int
    pad_id: int
    eos_id: int
    unk_id: int
    bos_id: int
    lossless: bool
    trained: dict | None = None

    @property
    def token_dtype(self) -> str:
        return token_dtype_for_vocab(self.vocab_size)

    def manifest_entry(self) -> dict:
        return {
            "file": MODEL_NAME,
            "sha256": self.sha256,
            "vocab_size": self.vocab_size,
            "token_dtype": self.token_dtype,
            "special_ids": {"pad": self.pad_id, "eos": self.eos_id, "unk": self.unk_id,
                            "bos": self.bos_id},
            "lossless": self.lossless,
            "trained": self.trained,
        }


def describe(path: str, *, trained: dict | None = None,
             model: bytes | None = None) -> TokenizerInfo:
    """Facts the manifest records about the model at ``path`` (``model``: its bytes, if read)."""
    from tokenizer.encoder import check_lossless, load_model_bytes, processor_from_bytes
    from tokenizer.train import fingerprint

    model = load_model_bytes(path) if model is None else model
    sp = processor_from_bytes(model)
    return TokenizerInfo(
        path=path, sha256=fingerprint(model), vocab_size=sp.get_piece_size(),
        pad_id=sp.pad_id(), eos_id=sp.eos_id(), unk_id=sp.unk_id(), bos_id=sp.bos_id(),
        lossless=check_lossless(sp), trained=trained,
    )


def copy_model(source: str, directory: str) -> tuple[str, bytes]:
    from tokenizer.encoder import load_model_bytes

    target = storage.join(directory, MODEL_NAME)
    try:
        model = load_model_bytes(source)
    except (OSError, FileNotFoundError) as err:
        raise TokenizerError(f"--tokenizer_model {source!r} cannot be read: {err}") from err
    if source != target:
        with storage.atomic_open(target, "wb") as handle:
            handle.write(model)
    return target, model


def train_on_input(*, config, inputs, beam_args) -> dict:
    """Sampling pipeline, then SentencePiece training; returns the training record."""
    from tokenizer.sample import DrawTokenizerSample, load_sample
    from tokenizer.spec import TrainOptions
    from tokenizer.train import train_from_texts

    sample_dir = storage.join(config.output, SAMPLE_DIR)
    fs, stripped = storage.filesystem(sample_dir)
    if fs.exists(stripped):
        fs.rm(stripped, recursive=True)
    started = time.time()
    with beam.Pipeline(options=PipelineOptions(beam_args)) as p:
        files = p | "ListInputs" >> beam.Create(inputs)
        files | "Sample" >> DrawTokenizerSample(
            config=config.read, sample_bytes=config.tokenizer_sample_bytes, seed=config.seed,
            directory=sample_dir, max_piece_bytes=MAX_PIECE_BYTES,
        )
    pieces = load_sample(sample_dir) if fs.exists(stripped) else []
    sampling_seconds = time.time() - started
    if not pieces:
        raise TokenizerError(
            f"no text to train a tokenizer on in --input {config.input!r} (every document was "
            "filtered or rejected); check --include_subsets/--exclude_subsets or give "
            "--tokenizer_model"
        )
    per_subset: dict[str, int] = {}
    for subset, text in pieces:
        per_subset[subset] = per_subset.get(subset, 0) + len(text.encode("utf-8"))
    options = TrainOptions(vocab_size=config.vocab_size, seed=config.seed,
                           num_threads=config.encoder_threads)
    log.info("training a %d-piece tokenizer on %d sample pieces (%d bytes)",
             config.vocab_size, len(pieces), sum(per_subset.values()))
    trained = train_from_texts(texts=(text for _, text in pieces), output_dir=config.output,
                               options=options)
    fs.rm(stripped, recursive=True)
    return {
        "sample_bytes": sum(per_subset.values()),
        "sample_pieces": len(pieces),
        "sample_bytes_by_subset": dict(sorted(per_subset.items())),
        "seed": config.seed,
        "requested_vocab_size": config.vocab_size,
        "sampling_seconds": round(sampling_seconds, 3),
        "training_seconds": round(trained.train_seconds, 3),
    }


def prepare_tokenizer(*, config, inputs, beam_args) -> TokenizerInfo:
    if config.tokenizer_model:
        path, model = copy_model(config.tokenizer_model, config.output)
        info = describe(path, model=model)
    else:
        record = train_on_input(config=config, inputs=inputs, beam_args=beam_args)
        info = describe(storage.join(config.output, MODEL_NAME), trained=record)
    if info.pad_id < 0 and config.last_record == "pad":
        raise TokenizerError(
            f"tokenizer {config.tokenizer_model} has no pad id, so partial records cannot be "
            "padded; use --last_record=drop or a model with a pad piece"
        )
    if info.eos_id < 0:
        raise TokenizerError(f"tokenizer {info.path} has no eos id; documents cannot be separated")
    if not info.lossless:
        log.warning("tokenizer %s is not lossless (normalization or whitespace folding): "
                    "decoded text will differ from the input", info.path)
    return info
