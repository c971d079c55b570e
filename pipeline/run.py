"""Entry point: ``python -m pipeline.run [pipeline flags] [Beam flags]``.

Without ``--input`` it builds the built-in sample (see ``datagen.sample.cache``) and makes a
``train`` split (training a tokenizer on it) and a ``val`` split (with that tokenizer) under
``--output`` (default ``output/sample``). With ``--input`` it makes one split in ``--output``.
Flags that are not pilepack's must be Beam's (``--runner``, ``--direct_num_workers``,
Dataflow's, ...); any other flag is refused before anything runs.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import time

from common import cli
from common.errors import ConfigError, PilepackError, find_error
from common.flags import ArgumentParser, add_flags, from_args
from pipeline.config import PipelineConfig

# Everything else is imported inside the functions: the encoder processes (spawned) import
# this module as their __main__, and must not pay for Apache Beam's import.

log = logging.getLogger("pilepack")


# Long because: it wires every stage of a run in the order they run, one labelled call each.
def build_pipeline(p, *, config: PipelineConfig, inputs, tokenizer, fanout: bool,
                   whole_machine: bool = False,
                   run_id: str, quality=None, committed=None, resumed=None) -> None:
    """Read -> [FanOut] -> Parse -> Tokenize -> Pack -> WriteParts -> WriteShards, the other
    ``--formats`` (``pipeline.write.formats.registry``), dead letters, document hashes, and last
    the manifest from everyone's statistics. ``quality``: the data-quality options'
    ``pipeline.quality.prepare.QualityRun`` (None: none given). ``committed``: the run's
    ``pipeline.write.committed_parts.CommittedParts`` (None: nothing recorded for a rerun);
    the chunks a dead run committed join each stage's output after it (``Reuse``);
    ``resumed``: the launcher's part of the manifest's ``resume``."""
    import apache_beam as beam

    from pipeline.dataset.manifest import CommitManifest
    from pipeline.quality.split_doc_hashes import WriteDocHashes
    from pipeline.read.stage import ReadDocuments
    from pipeline.tokenize.stage import Tokenize
    from pipeline.write.committed_parts import DIGESTS, PARTS, STATS, ReplayCommitted
    from pipeline.write.dead_letters import WriteDeadLetters
    from pipeline.write.formats.base import DOCUMENTS, RECORDS, WriteContext
    from pipeline.write.formats.registry import extra_formats
    from pipeline.write.pack import Pack
    from pipeline.write.parts import WriteParts
    from pipeline.write.shards import WriteShards
    from schemas.claim import Fence
    from schemas.dataset_spec import DatasetSpec

    # Every file the job commits into --output is fenced by this run's claim: once another run
    # takes it over, this job's workers stop writing there (schemas.claim.Fence).
    fence = Fence(output=config.output, run_id=run_id)
    spec = DatasetSpec(seq_len=config.seq_len, vocab_size=tokenizer.vocab_size,
                       with_segments=config.segment_ids, last_record=config.last_record)
    formats = extra_formats(config.formats, WriteContext(
        directory=config.output, split=config.split, shard_bytes=config.shard_bytes,
        record=spec.record, vocab_size=spec.vocab_size, fence=fence))
    from_documents = tuple(fmt for fmt in formats if fmt.built_from == DOCUMENTS)
    files = p | "ListInputs" >> beam.Create(inputs)
    read = files | "Read" >> ReadDocuments(
        config=config.read, paths=tuple(f.path for f in inputs), fanout=fanout,
        selection=quality.selection if quality else None, committed=committed)
    chunks = read["chunks"]
    reused = read["reused"] | "Reuse" >> ReplayCommitted(
        format_names=tuple(fmt.name for fmt in from_documents))
    hashes = chunks | "DocHashes" >> WriteDocHashes(directory=config.output,
                                                    fence=fence, reused=reused[DIGESTS])
    tokenized = chunks | "Tokenize" >> Tokenize(
        model_path=tokenizer.path, threads=config.encoder_threads,
        processes=config.encode_processes, pool_if_auto=whole_machine, encoder=config.encoder,
        on_mismatch=config.on_encoder_mismatch, check_every=config.encoder_check_every,
        file_paths=tuple(f.path for f in inputs), committed=committed)
    parts = (
        tokenized.chunks
        | "Pack" >> Pack(spec=spec.record, eos_id=tokenizer.eos_id, pad_id=tokenizer.pad_id,
                         last_record=config.last_record, formats=from_documents)
        | "WriteParts" >> WriteParts(directory=config.output, spec=spec.record,
                                     pad_id=tokenizer.pad_id, formats=from_documents,
                                     fence=fence, committed=committed)
    )
    all_parts = (parts.parts, reused[PARTS]) | "AllParts" >> beam.Flatten()
    shards = all_parts | "WriteShards" >> WriteShards(
        directory=config.output, split=config.split, shard_bytes=config.shard_bytes,
        spec=spec.record,
        **({"shuffle_seed": quality.plan.seed, "shuffle": quality.plan.shuffle_spec}
           if quality and quality.plan.shuffle else {}),
        formats=tuple(fmt for fmt in formats if fmt.built_from == RECORDS), fence=fence)
    dead = read["dead_letters"] | "DeadLetters" >> WriteDeadLetters(
        directory=config.output, split=config.split, fence=fence)
    (
        (shards, parts.chunk_stats, read["read_stats"], dead, tokenized.encoder_stats, hashes,
         reused[STATS],
         *(fmt.assemble((parts[fmt.name], reused[fmt.name])
                        | f"All{fmt.name.capitalize()}Parts" >> beam.Flatten())
           for fmt in from_documents))
        | "AllStatistics" >> beam.Flatten()
        | "Manifest" >> CommitManifest(config=config, spec=spec, run_id=run_id,
                                       tokenizer=tokenizer.manifest_entry(), inputs=inputs,
                                       quality=quality, resumed=resumed)
    )


# Long because: one run in the order it happens (claim, tokenizer, pre-pass, graph, job,
# the commit check), each step a call whose result the next ones take.
def run_split(config: PipelineConfig, beam_args: list[str]) -> dict:
    """Make one split; return its manifest."""
    import functools

    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipeline.launch import claim, output_dir, resume
    from pipeline.launch.beam_options import fanout_enabled, runner_name, runs_in_one_process
    from pipeline.quality import prepare as prepare_quality
    from pipeline.quality.plan import plan_quality
    from pipeline.read.inputs import expand_inputs
    from pipeline.tokenize import committed_model
    from pipeline.tokenize.prepare import prepare_tokenizer
    from pipeline.write.progress import Watcher
    from schemas import manifest as manifest_schema
    from schemas.claim import Fence

    if not config.input or not config.output:
        raise ConfigError("--output is required with --input")
    started = time.time()
    inputs = expand_inputs(config.input)
    plan = plan_quality(config, inputs=inputs)  # a wrong path fails before any work
    held = claim.claim(config.output, runner=runner_name(beam_args),
                       take_over=config.take_over_claim)  # before anything in --output
    binding = claim.Binding(output=config.output, held=held, beam_args=beam_args,
                            cancel_on_interrupt=config.cancel_on_interrupt)
    run_job = functools.partial(run_to_completion, binding=binding)  # every job, bound in turn
    fence = Fence(output=config.output, run_id=held.run_id)  # every file each job commits
    try:
        output_dir.prepare(config.output, overwrite=config.overwrite, split=config.split,
                           run_id=held.run_id, resume=config.resume)
        tokenizer = prepare_tokenizer(config=config, inputs=inputs, beam_args=beam_args,
                                      run_job=run_job, fence=fence)
        fingerprint = resume.run_fingerprint(config=config, inputs=inputs, plan=plan,
                                             tokenizer_sha256=tokenizer.sha256)
        quality = prepare_quality.prepare(config, plan=plan, inputs=inputs,
                                          model_path=tokenizer.path, beam_args=beam_args,
                                          fanout=fanout_enabled(config.fanout, beam_args),
                                          run_job=run_job, fence=fence,
                                          fingerprint=fingerprint)
        p = beam.Pipeline(options=PipelineOptions(beam_args))
        build_pipeline(p, config=config, inputs=inputs, tokenizer=tokenizer,
                       fanout=fanout_enabled(config.fanout, beam_args), run_id=held.run_id,
                       whole_machine=runs_in_one_process(beam_args),
                       quality=quality, **_resume_args(config, fingerprint=fingerprint,
                                                       tokenizer=tokenizer, quality=quality,
                                                       fence=fence))
        with Watcher(output=config.output, split=config.split,
                     total_input_bytes=sum(f.bytes for f in inputs)):
            result = run_job(p)
        dataset = manifest_schema.load(config.output)
        if dataset.doc["run_id"] != held.run_id:
            raise claim.OutputClaimed(
                f"{dataset.manifest_path} was committed by run {dataset.doc['run_id']}, not by "
                f"this run ({held.run_id}): another job wrote the same --output; check both")
        output_dir.finish(config.output)
        committed_model.forget(config.output)  # the dataset is committed: nothing to resume
    finally:
        binding.release()  # unless its current job may still be running
    print_summary(dataset.doc, manifest_path=dataset.manifest_path,
                  seconds=time.time() - started, input_bytes=sum(f.bytes for f in inputs),
                  workers=worker_pids(result))
    return dataset.doc


def _resume_args(config: PipelineConfig, *, fingerprint: str, tokenizer, quality,
                 fence) -> dict:
    """``build_pipeline``'s ``committed`` and ``resumed``: every run commits its chunks for a
    rerun under ``fingerprint`` (behind ``fence``); one with ``--resume`` reuses them."""
    from pipeline.write.committed_parts import CommittedParts

    return {"committed": CommittedParts(directory=config.output, fingerprint=fingerprint,
                                        reuse=config.resume, fence=fence),
            "resumed": {"prepass_reused": bool(quality and quality.prepass_reused),
                        "tokenizer_reused": tokenizer.reused}}


# How a Beam runner reports a worker process that died under it (killed, out of memory):
# the portable DirectRunner loses its data channel; others lose the gRPC connection.
_WORKER_LOST = ("Channel closed prematurely", "Socket closed", "StatusCode.UNAVAILABLE")


class WorkerLost(PilepackError):
    """A Beam worker process died during the run and the runner did not retry its work."""


def run_to_completion(p, *, binding=None):
    """Run the pipeline (through ``binding``, a ``pipeline.launch.claim.Binding``: its job
    bound to the claim); a lost worker becomes a WorkerLost error (no manifest is written,
    and a rerun rewrites parts and shards identically), anything else propagates."""
    try:
        if binding is not None:
            result = binding.run(p)
        else:
            result = p.run()
            result.wait_until_finish()
    except Exception as err:
        text = f"{type(err).__name__}: {err}"
        if find_error(err) is None and any(sign in text for sign in _WORKER_LOST):
            raise WorkerLost(
                "a Beam worker process died during the run (killed, or out of memory?) and the "
                f"runner did not retry its work ({text.splitlines()[0][:200]}); no manifest was "
                "written, so no partial dataset exists: rerun the same command") from err
        raise
    return result


def worker_pids(result) -> list[int]:
    """The processes that ran Tokenize, from the runner's metrics (empty if it has none)."""
    from apache_beam.metrics.metric import MetricsFilter

    from pipeline.tokenize.stage import WORKERS_NAMESPACE

    try:
        counters = result.metrics().query(
            MetricsFilter().with_namespace(WORKERS_NAMESPACE))["counters"]
    except (NotImplementedError, KeyError):
        return []
    return sorted({int(c.key.metric.name.split("-", 1)[1]) for c in counters
                   if (c.committed or c.attempted)})


def print_summary(doc: dict, *, manifest_path: str, seconds: float, input_bytes: int,
                  workers: list[int] = ()) -> None:
    totals, acct = doc["totals"], doc["accounting"]
    mb = totals["text_bytes"] / 1e6

    def counts(by_reason: dict) -> str:
        detail = ", ".join(f"{reason} {n:,}" for reason, n in by_reason.items())
        return f"{sum(by_reason.values()):,}" + (f" ({detail})" if detail else "")

    from pipeline.launch.resume import reuse_line

    print(f"[{doc['split']}] manifest: {manifest_path}")
    if reuse_line(doc):
        print(f"[{doc['split']}] {reuse_line(doc)}")
    print(f"[{doc['split']}] documents read {acct['read']:,}: written {acct['written']:,}, "
          f"filtered {counts(acct['filtered'])}, rejected {counts(acct['rejected'])}")
    if doc["dead_letters"]:
        print(f"[{doc['split']}] dead letters: "
              + ", ".join(d["path"] for d in doc["dead_letters"]))
    print(f"[{doc['split']}] {totals['tokens']:,} tokens in {totals['records']:,} records, "
          f"{totals['shards']} shard(s), {totals['bytes']:,} bytes "
          f"(input {input_bytes:,} bytes, {mb:.1f} MB of text)")
    print(f"[{doc['split']}] {seconds:.1f} s: {mb / seconds:.2f} MB/s of text, "
          f"{totals['tokens'] / seconds:,.0f} tokens/s"
          + (f", tokenized by {len(workers)} worker process(es)" if workers else ""))


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="python -m pipeline.run",
        description="The Pile (.jsonl.zst) -> SentencePiece -> packed TFRecord shards + "
                    "manifest. Flags not listed here are Apache Beam's (--runner, ...).",
    )
    add_flags(parser, PipelineConfig)
    add_flags(parser, cli.CommandFlags)
    return parser


def parse(argv: list[str]) -> tuple[PipelineConfig, list[str]]:
    """``(config, beam_args)``: pilepack's flags as the run's config, and the rest, which must
    be Beam's (else exit 2 naming the typo), with the ones this command adds.

    A run of the built-in sample (no ``--input``, no ``--dry_run``) takes ``--output`` as the
    root of the sample's splits, not as a split, so no split name is taken from it: the
    config's is the first split's (``--split``, else ``train``).

    Raises:
      ConfigError: a flag's value the config refuses (``--seq_len=0``).
    """
    from pipeline.launch.beam_options import is_direct_runner, refuse_unknown_args
    from pipeline.launch.builtin_sample import SPLITS

    parser = build_parser()
    args, beam_args = parser.parse_known_args(argv)
    cli.configure_logging(verbose=args.verbose)  # before Beam is imported: it logs then
    refuse_unknown_args(parser, beam_args)
    if not args.verbose and not any(a.startswith("--default_sdk_harness_log_level")
                                    for a in beam_args):
        beam_args = [*beam_args, "--default_sdk_harness_log_level=ERROR"]  # workers' start-up
    if not args.verbose and is_direct_runner(beam_args):
        # The DirectRunner's worker processes write to this terminal (pipeline/__init__.py).
        os.environ[cli.LOCAL_WORKER_ENV] = "1"
    sample = {} if args.input or args.dry_run else {"split": args.split or SPLITS[0]}
    if args.overwrite:  # replacing the output starts clean, as --no-resume does
        args.resume = False
    return from_args(PipelineConfig, args, **sample), beam_args


def main(argv=None) -> int:
    return cli.run_main(lambda: _run(*parse(sys.argv[1:] if argv is None else argv)))


def _run(config: PipelineConfig, beam_args: list[str]) -> None:
    if config.dry_run:
        from pipeline.launch.dry_run.estimate import dry_run

        dry_run(config, beam_args)
    elif config.input:
        run_split(config, beam_args)
    else:
        run_sample(config, beam_args)


def run_sample(config: PipelineConfig, beam_args: list[str]) -> None:
    """The built-in sample (``config`` without an input): a train split (training the
    tokenizer), then a val split with it, under ``--output``."""
    from common import storage
    from pipeline.launch.builtin_sample import SAMPLE_OUTPUT, builtin_splits
    from tokenizer.spec import MODEL_FILENAME

    first, second = builtin_splits()  # one error line where datagen/ is not installed
    root = (config.output or SAMPLE_OUTPUT).rstrip("/")
    print(f"built-in sample: {[*first.paths, *second.paths]}")
    train = dataclasses.replace(config, input=first.input, output=f"{root}/{first.name}")
    run_split(train, beam_args)
    val = dataclasses.replace(train, input=second.input, output=f"{root}/{second.name}",
                              split=second.name,
                              tokenizer_model=storage.join(train.output, MODEL_FILENAME))
    run_split(val, beam_args)


if __name__ == "__main__":
    sys.exit(main())
