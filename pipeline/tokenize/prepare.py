"""Make the split's tokenizer available next to its shards: copy a given model, or train one.

Either way the dataset directory ends up self-contained, with ``tokenizer.model`` (and
``tokenizer.vocab`` when trained) whose sha256 the manifest records. Training runs the
sampling stage (``pipeline.tokenize.training_sample``) as a Beam pipeline of its own, then
SentencePiece in this process on the sample.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from common import storage
from common.errors import PilepackError
from pipeline.config import ReadConfig, TokenizerTrainingConfig
from schemas.claim import NO_FENCE, Fence
from tokenizer.model_info import ModelInfo, describe, parse_model
from tokenizer.spec import MODEL_FILENAME

log = logging.getLogger(__name__)

SAMPLE_DIR = "tokenizer_sample"
MAX_PIECE_BYTES = 4096


class TokenizerError(PilepackError, ValueError):
    """A tokenizer that cannot be read, trained or used for this dataset."""


def copy_model(source: str, directory: str) -> tuple[str, bytes]:
    from tokenizer.encoder import load_model_bytes

    target = storage.join(directory, MODEL_FILENAME)
    try:
        model = load_model_bytes(source)
    except OSError as err:
        raise TokenizerError(f"--tokenizer_model {source!r} cannot be read: {err}") from err
    parse_model(model, source=f"--tokenizer_model {source}")  # before it is copied anywhere
    if source != target:
        with storage.atomic_open(target, "wb") as handle:
            handle.write(model)
    return target, model


def train_on_input(*, inputs, input_desc: str, output: str, read: ReadConfig,
                   training: TokenizerTrainingConfig, beam_args: list[str],
                   run_job: Callable[[beam.Pipeline], object] | None = None,
                   fence: Fence = NO_FENCE) -> dict:
    """Sampling pipeline, then SentencePiece training into ``output``; returns the record the
    manifest keeps about the training. ``run_job`` runs the sampling pipeline to its end (the
    launcher's binds its job to the output's claim); None: ``p.run().wait_until_finish()``.
    ``fence``: checked before each sample file is committed (``schemas.claim.Fence``)."""
    from pipeline.tokenize.training_sample import DrawTokenizerSample, load_sample, remove_sample
    from tokenizer.spec import TrainOptions
    from tokenizer.train import train_from_texts

    sample_dir = storage.join(output, SAMPLE_DIR)
    remove_sample(sample_dir)  # an interrupted run's; only pilepack's own files
    started = time.time()
    p = beam.Pipeline(options=PipelineOptions(beam_args))
    files = p | "ListInputs" >> beam.Create(inputs)
    files | "Sample" >> DrawTokenizerSample(
        config=read, sample_bytes=training.tokenizer_sample_bytes, seed=training.seed,
        directory=sample_dir, max_piece_bytes=MAX_PIECE_BYTES, fence=fence,
    )
    if run_job is None:
        p.run().wait_until_finish()
    else:
        run_job(p)
    pieces = load_sample(sample_dir)
    sampling_seconds = time.time() - started
    if not pieces:
        raise TokenizerError(
            f"no text to train a tokenizer on in --input {input_desc!r} (every document was "
            "filtered or rejected); check --include_subsets/--exclude_subsets or give "
            "--tokenizer_model"
        )
    per_subset: dict[str, int] = {}
    for subset, text in pieces:
        per_subset[subset] = per_subset.get(subset, 0) + len(text.encode("utf-8"))
    options = TrainOptions(vocab_size=training.vocab_size, seed=training.seed,
                           num_threads=training.threads)
    log.info("training a %d-piece tokenizer on %d sample pieces (%d bytes)",
             training.vocab_size, len(pieces), sum(per_subset.values()))
    trained = train_from_texts(texts=(text for _, text in pieces), output_dir=output,
                               options=options)
    remove_sample(sample_dir)
    return {
        "sample_bytes": sum(per_subset.values()),
        "sample_pieces": len(pieces),
        "sample_bytes_by_subset": dict(sorted(per_subset.items())),
        "seed": training.seed,
        "requested_vocab_size": training.vocab_size,
        "sampling_seconds": round(sampling_seconds, 3),
        "training_seconds": round(trained.train_seconds, 3),
    }


def _trained(*, config, inputs, beam_args, run_job, fence: Fence) -> ModelInfo:
    """The model trained on ``inputs`` in ``config.output``: the one a dead run committed for
    the same inputs and options (``config.resume``), else trained now and committed."""
    from pipeline.tokenize import committed_model

    key = committed_model.training_fingerprint(read=config.read, training=config.training,
                                               inputs=inputs)
    path = storage.join(config.output, MODEL_FILENAME)
    record = committed_model.load(config.output, fingerprint=key) if config.resume else None
    if record is not None:
        log.info("resume: reusing the tokenizer an earlier run trained and committed (%s)", path)
        return dataclasses.replace(describe(path, trained=record), reused=True)
    committed_model.forget(config.output)  # before the model is replaced
    record = train_on_input(inputs=inputs, input_desc=config.input, output=config.output,
                            read=config.read, training=config.training,
                            beam_args=beam_args, run_job=run_job, fence=fence)
    info = describe(path, trained=record)
    committed_model.commit(config.output, fingerprint=key, sha256=info.sha256, record=record)
    return info


def prepare_tokenizer(*, config, inputs, beam_args,
                      run_job: Callable[[beam.Pipeline], object] | None = None,
                      fence: Fence = NO_FENCE) -> ModelInfo:
    """The run's tokenizer in ``config.output``: copied from --tokenizer_model, or trained
    (``run_job``, ``fence``: see ``train_on_input``)."""
    if config.tokenizer_model:
        path, model = copy_model(config.tokenizer_model, config.output)
        info = describe(path, model=model)
    else:
        info = _trained(config=config, inputs=inputs, beam_args=beam_args, run_job=run_job,
                        fence=fence)
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
