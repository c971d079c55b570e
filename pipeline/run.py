"""Entry point: ``python -m pipeline.run [pipeline flags] [Beam flags]``.

Without ``--input`` it builds the built-in sample (see ``pipeline.sample_data``) and makes a
``train`` split (training a tokenizer on it) and a ``val`` split (with that tokenizer) under
``--output`` (default ``output/sample``). With ``--input`` it makes one split in ``--output``.
Flags it does not know are Beam's (``--runner``, ``--direct_num_workers``, Dataflow's, ...).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

from pipeline import config as config_lib

# Everything else is imported inside the functions: the encoder processes (spawned) import
# this module as their __main__, and must not pay for Apache Beam's import.

log = logging.getLogger("pilepack")


def build_pipeline(p, *, config: config_lib.PipelineConfig, inputs, tokenizer) -> None:
    """Read -> Tokenize -> Pack -> Write, then the manifest from everyone's statistics."""
    import apache_beam as beam

    from pipeline.dead_letters import WriteDeadLetters
    from pipeline.manifest import CommitManifest
    from pipeline.pack import Pack
    from pipeline.read import ReadDocuments
    from pipeline.tokenize import Tokenize
    from pipeline.write import WriteShards
    from schemas.records import RecordSpec

    spec = RecordSpec(seq_len=config.seq_len, token_dtype=tokenizer.token_dtype,
                      with_segments=config.segment_ids)
    files = p | "ListInputs" >> beam.Create(inputs)
    read = files | "Read" >> ReadDocuments(config=config.read)
    written = (
        read.chunks
        | "Tokenize" >> Tokenize(model_path=tokenizer.path, num_threads=config.encoder_threads,
                                 processes=config.encode_processes)
        | "Pack" >> Pack(spec=spec, eos_id=tokenizer.eos_id, pad_id=tokenizer.pad_id,
                         last_record=config.last_record)
        | "Write" >> WriteShards(directory=config.output, split=config.split,
                                 shard_bytes=config.shard_bytes, spec=spec,
                                 pad_id=tokenizer.pad_id)
    )
    dead = read.dead_letters | "DeadLetters" >> WriteDeadLetters(directory=config.output,
                                                                 split=config.split)
    (
        (written.shards, written.chunk_stats, read.read_stats, dead)
        | "AllStatistics" >> beam.Flatten()
        | "Manifest" >> CommitManifest(config=config, tokenizer=tokenizer.manifest_entry(),
                                       features=spec.to_manifest(), inputs=inputs)
    )


def run_split(config: config_lib.PipelineConfig, beam_args: list[str]) -> dict:
    """Make one split; return its manifest."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipeline import output_dir
    from pipeline.inputs import expand_inputs
    from schemas import manifest as manifest_schema
    from tokenizer import prepare

    started = time.time()
    inputs = expand_inputs(config.input)
    output_dir.prepare(config.output, overwrite=config.overwrite)
    tokenizer = prepare.prepare_tokenizer(config=config, inputs=inputs, beam_args=beam_args)
    options = PipelineOptions(beam_args)
    with beam.Pipeline(options=options) as p:
        build_pipeline(p, config=config, inputs=inputs, tokenizer=tokenizer)
    dataset = manifest_schema.load(config.output)
    print_summary(dataset.doc, manifest_path=dataset.manifest_path,
                  seconds=time.time() - started, input_bytes=sum(f.bytes for f in inputs))
    return dataset.doc


def print_summary(doc: dict, *, manifest_path: str, seconds: float, input_bytes: int) -> None:
    totals, acct = doc["totals"], doc["accounting"]
    mb = totals["text_bytes"] / 1e6
    print(f"[{doc['split']}] manifest: {manifest_path}")
    def counts(by_reason: dict) -> str:
        detail = ", ".join(f"{reason} {n:,}" for reason, n in by_reason.items())
        return f"{sum(by_reason.values()):,}" + (f" ({detail})" if detail else "")

    print(f"[{doc['split']}] documents read {acct['read']:,}: written {acct['written']:,}, "
          f"filtered {counts(acct['filtered'])}, rejected {counts(acct['rejected'])}")
    if doc["dead_letters"]:
        print(f"[{doc['split']}] dead letters: "
              + ", ".join(d["path"] for d in doc["dead_letters"]))
    print(f"[{doc['split']}] {totals['tokens']:,} tokens in {totals['records']:,} records, "
          f"{totals['shards']} shard(s), {totals['bytes']:,} bytes "
          f"(input {input_bytes:,} bytes, {mb:.1f} MB of text)")
    print(f"[{doc['split']}] {seconds:.1f} s: {mb / seconds:.2f} MB/s of text, "
          f"{totals['tokens'] / seconds:,.0f} tokens/s")


def parse(argv):
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.run",
        description="The Pile (.jsonl.zst) -> SentencePiece -> packed TFRecord shards + manifest",
    )
    config_lib.add_flags(parser)
    return parser.parse_known_args(argv)


class _HidePilepackErrors(logging.Filter):
    """Beam logs a worker's exception with its traceback before re-raising it; ours are
    printed once, as one line, by ``main``."""

    def filter(self, record):
        return "pilepack-error: " not in record.getMessage()


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("apache_beam", "absl"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    for handler in logging.getLogger().handlers:
        handler.addFilter(_HidePilepackErrors())
    args, beam_args = parse(sys.argv[1:] if argv is None else argv)
    if not args.encode_processes:
        args.encode_processes = default_encode_processes(beam_args)
    from schemas.manifest import ManifestError
    from tokenizer.prepare import TokenizerError

    try:
        if args.input:
            if not args.output:
                raise ValueError("--output is required with --input")
            config = config_lib.config_from_args(args, input=args.input, output=args.output)
            run_split(config, beam_args)
        else:
            run_sample(args, beam_args)
    except (ValueError, OSError, TokenizerError, ManifestError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # Beam wraps worker errors; show ours without the trace
        message = _pilepack_message(err)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 2
    return 0


def default_encode_processes(beam_args: list[str]) -> int:
    """One encoder process per core on the DirectRunner; in-process on distributed runners."""
    runner = "DirectRunner"
    for i, arg in enumerate(beam_args):
        if arg.startswith("--runner="):
            runner = arg.split("=", 1)[1]
        elif arg == "--runner" and i + 1 < len(beam_args):
            runner = beam_args[i + 1]
    if runner not in ("DirectRunner", "direct", "BundleBasedDirectRunner"):
        return 1
    return os.cpu_count() or 1


def run_sample(args, beam_args) -> None:
    from pipeline.sample_data import ensure_sample
    from common import storage
    from tokenizer import prepare

    sample = ensure_sample()
    root = args.output or "output/sample"
    print(f"built-in sample: {sample.train_paths + [sample.val_path]}")
    train = config_lib.config_from_args(args, input=",".join(sample.train_paths),
                                        output=root.rstrip("/") + "/train")
    run_split(train, beam_args)
    model = storage.join(train.output, prepare.MODEL_NAME)
    args.split = None
    args.tokenizer_model = model
    val = config_lib.config_from_args(args, input=sample.val_path, output=root.rstrip("/") + "/val")
    run_split(val, beam_args)


def _pilepack_message(err: BaseException) -> str | None:
    seen = err
    while seen is not None:
        text = str(seen)
        if "pilepack-error: " in text:
            return text.split("pilepack-error: ", 1)[1].split("\n", 1)[0].split(" [while", 1)[0]
        seen = seen.__cause__ or seen.__context__
    return None


if __name__ == "__main__":
    sys.exit(main())
