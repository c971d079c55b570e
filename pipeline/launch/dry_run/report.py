"""The lines ``--dry_run`` prints (``pipeline.launch.dry_run``): each figure with where it
came from, and which of them are estimates."""

from __future__ import annotations

from pipeline.config import PipelineConfig
from pipeline.launch.dry_run.sample import ASSUMED_BYTES_PER_TOKEN, SAMPLE_TEXT_BYTES
from pipeline.quality.decision_files import DECONTAMINATED, NEAR_DUPLICATE


def _size(n: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{n:,.0f} bytes"


def _duration(hours: float) -> str:
    seconds = hours * 3600
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{hours:.1f} h"


def _exactness(est) -> str:
    assumed = ("" if est.bytes_per_token else "; tokens and all that follows from them rest on "
               "the ASSUMED bytes per token")
    if est.complete_files == est.files:
        return "counted exactly (every input file was read to its end)" + assumed
    return (f"ESTIMATES from the first {SAMPLE_TEXT_BYTES >> 20} MiB of text of "
            f"{est.sampled_files} file(s), {est.complete_files} of them read to their end "
            "(counted exactly); the rest extrapolated per byte of text" + assumed)


def _duplicates_how(est) -> str:
    if est.complete_files == est.files:
        return "counted as the run counts them (every input file was read to its end)"
    share = est.sampled_text_bytes / max(1, est.text_bytes)
    return ("an ESTIMATE from the sample, and a LOWER BOUND: only duplicates within the sample "
            "are seen (a copy past the sampled start of a file, or in a file not sampled, is "
            f"not; the sample is {share:.1%} of the text, and copies spread evenly over the "
            "input would be seen about that often), while every sampled document dropped "
            "here the run drops too")


def dedup_lines(est) -> list[str]:
    """--dedup: exact, then near duplicates, and how they were found (``est.plan``'s)."""
    if not est.plan.exact_dedup:
        return []
    share = est.duplicates / max(1, est.documents)
    lines = [f"--dedup={est.plan.dedup}: exact duplicates drop ~ {est.duplicates:,.0f} "
             f"documents ({share:.1%} of those read; pipeline.quality.doc_hash, lowest (file, "
             f"line) kept); {_duplicates_how(est)}"]
    near, options = est.drops.near, est.plan.near
    if near is not None:
        count = est.dropped.get(NEAR_DUPLICATE, 0.0)
        sizes = ", ".join(f"{n:,} of {size}" for size, n in near.cluster_sizes.items())
        lines.append(
            f"--dedup=near: near duplicates drop ~ {count:,.0f} more documents "
            f"({count / max(1, est.documents):.1%} of those read): within the sample, "
            f"{near.documents:,} exact survivors signed (MinHash, --minhash_perm="
            f"{options.perm}, --shingle_words={options.shingle_words}), "
            f"{near.candidate_pairs:,} candidate pairs from --minhash_bands="
            f"{options.bands}, {near.verified_pairs:,} verified at Jaccard >= "
            f"{options.threshold:g}, clusters {sizes or 'none'}; "
            f"{_duplicates_how(est)}")
    return lines


def decontamination_lines(est) -> list[str]:
    """--decontaminate: documents dropped (and redacted), per evaluation set."""
    found = est.drops.contamination
    if found is None:
        return []
    options = est.plan.decontaminate
    count = est.dropped.get(DECONTAMINATED, 0.0)
    per_set = ", ".join(f"{name} {n:,}" for name, n in found.per_set.items())
    line = (f"--decontaminate ({options.mode}, "
            f"{options.n}-grams): ~ {count:,.0f} documents drop "
            f"({count / max(1, est.documents):.1%} of those read); sampled documents holding "
            f"n-grams of each evaluation set: {per_set}")
    if est.plan.redacts:
        redacted = found.redacted / max(1, est.sampled_documents) * est.documents
        line += (f"; ~ {redacted:,.0f} more are redacted and kept ({found.spans:,} spans, "
                 f"{found.characters:,} characters cut in the sample; the text and token "
                 "figures below do NOT take the cuts off)")
    how = ("counted exactly (every input file was read to its end)"
           if est.complete_files == est.files else
           "an ESTIMATE from the sample, document by document (not a bound: as good as the "
           "sampled starts of the files are like the rest)")
    return [f"{line}; {how}"]


def quality_lines(est) -> list[str]:
    """Dedup, contamination and mixture: what each changes, and how it was estimated."""
    lines = [*decontamination_lines(est), *dedup_lines(est)]
    if est.plan.exclude_docs_from:
        lines.append("--exclude_docs_from: what it removes is NOT estimated (none assumed), "
                     "nor the time to read its sources; the pre-pass's time over the input is")
    if est.weights.how:
        rows = "; ".join(
            f"{name} x{row['weight']:.3g}: {row['tokens_before']:,.0f} -> "
            f"{row['tokens_after']:,.0f} tokens ({row['token_share']:.1%})"
            for name, row in est.subsets.items())
        lines.append(f"mixture {est.weights.how}: copies are the run's own draws in files read "
                     "to their end, the expected copies (the weight) elsewhere; per subset: "
                     f"{rows}")
    if lines:
        lines.append(f"written ~ {est.written_documents:,.0f} documents (copies counted) of "
                     f"{_size(est.written_text_bytes)} of text")
    return lines


def compute_lines(est, *, cluster) -> list[str]:
    """Backend, core-hours (and the rate's source), pre-pass, wall time."""
    rate = est.rate
    lines = [
        (f"encoder {est.backend.name} ({est.backend.how}); compute ~ {est.core_hours:,.3g} "
         f"core-hours at {rate.text_mb_per_cpu_second:g} MB of text per CPU-second, measured "
         f"for {rate.backend} by {rate.describe()}"
         + ("; of the text read: the mixture's copies are packed and written again, not "
            "tokenized, and not in this figure" if est.weights.how else "")),
    ]
    if est.prepass is not None:
        plan = est.plan
        work = ", ".join(name for name, used in (
            ("read", True), ("hash", plan.groups_by_hash), ("sign", plan.near is not None),
            ("scan n-grams", plan.decontaminate is not None),
            ("tokenize", plan.counts_tokens)) if used)
        lines.append(f"quality pre-pass ({work} every input once more, before the run) ~ "
                     f"{est.prepass.core_hours:,.3g} core-hours, wall ~ "
                     f"{_duration(est.prepass.wall_hours)}: {est.prepass.how}")
    lines.append(
        f"wall ~ {_duration(est.wall_hours)} plus start-up on {cluster.workers} worker(s) x "
        f"{cluster.cores_per_worker} core(s) ({cluster.source}); {cluster.runner}, fan-out "
        f"{'on' if cluster.fanout else 'off'}: {est.usable_cores:,} core(s) usable; of it, "
        f"reading the largest file (one worker, start to end) ~ "
        f"{_duration(est.read_bound_hours)}"
        + ("" if est.prepass is None else ", the pre-pass ~ "
           + _duration(est.prepass.wall_hours)))
    return lines


def report(est, *, split: str, config: PipelineConfig, cluster) -> list[str]:
    """The dry run's printed lines (``est``: a ``pipeline.launch.dry_run.estimate.Estimate``)."""
    head = f"[{split}] dry run"
    text = est.text_bytes
    if est.bytes_per_token:
        per_subset = ", ".join(f"{name} {value:.2f}" for name, value in
                               est.bytes_per_token.items())
        tokens_how = (f"{text / max(1, est.tokens_read):.2f} text bytes per token with "
                      f"{config.tokenizer_model}; measured per subset: {per_subset}")
    else:
        tokens_how = (f"ASSUMED {ASSUMED_BYTES_PER_TOKEN} text bytes per document token, "
                      "English web text; give --tokenizer_model to measure")
    changed = bool(est.weights.how) or bool(est.dropped)  # tokens written != read
    lines = [
        (f"{est.files} input file(s), {_size(est.input_bytes)}; read the first "
         f"{SAMPLE_TEXT_BYTES >> 20} MiB of text of {est.sampled_files} of them "
         f"({est.complete_files} to their end); wrote nothing"),
        (f"text ~ {_size(text)} ({text / max(1, est.input_bytes):.2f} bytes of text per "
         f"input byte), ~ {est.documents:,.0f} documents in ~ {est.chunks:,.0f} chunk(s)"),
        *quality_lines(est),
        (f"tokens ~ {est.tokens:,.0f}" + (f" written, of ~ {est.tokens_read:,.0f} read" if
                                          changed else "") + f" ({tokens_how})"),
        (f"records ~ {est.records:,.0f} of {config.seq_len + 1} tokens "
         f"({est.frame_bytes:,} bytes each) in ~ {est.shards:,} shard(s) of --shard_bytes="
         f"{config.shard_bytes:,}: output ~ {_size(est.output_bytes)}, and as much again "
         "in transient parts (.parts/) while it runs"),
        *compute_lines(est, cluster=cluster),
        (f"what is estimated: text, documents, tokens, records, shards and bytes are "
         f"{_exactness(est)}; times are estimates from measured rates, start-up not included"),
    ]
    return [f"{head}: {line}" for line in lines]
