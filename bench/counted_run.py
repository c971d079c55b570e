"""``pipeline.run`` with each Beam job's wall seconds and shuffled bytes written to a JSON file.

    python -m bench.counted_run METRICS.json [pipeline.run flags...]

A wrapper for benchmarks, not a change to the run: ``pipeline.run.run_to_completion`` (every
job of a run goes through it: tokenizer sample, quality pre-pass, main pipeline) is wrapped to
time each job and read the runner's monitoring infos afterwards. A job's shuffled bytes are
what its ``GroupByKey``s take in (``CoGroupByKey``, ``Reshuffle`` and combiners expand to
them): for each of their input PCollections, its element count times the mean of the element
sizes Beam samples (``beam:metric:sampled_byte_size:v1``, the encoded size of a sample of the
elements). A runner without monitoring infos (not the in-memory DirectRunner) gets no figure.
"""

from __future__ import annotations

import json
import sys
import time

GBK_URN = "beam:transform:group_by_key:v1"


def shuffle_inputs(pipeline_proto) -> dict[str, str]:
    """Each PCollection a ``GroupByKey`` of ``pipeline_proto`` reads, to that transform's name."""
    return {
        pcoll: t.unique_name
        for t in pipeline_proto.components.transforms.values()
        if t.spec.urn == GBK_URN
        for pcoll in t.inputs.values()
    }


def shuffled_bytes(
    *, counts: dict[str, int], mean_sizes: dict[str, float], inputs: dict[str, str]
) -> dict[str, float]:
    """Bytes each ``GroupByKey`` takes in: ``counts[p] * mean_sizes[p]`` summed over its input
    PCollections ``p`` (``inputs``: PCollection -> GroupByKey); 0 for one never sampled."""
    found: dict[str, float] = {}
    for pcoll, name in inputs.items():
        found[name] = found.get(name, 0.0) + counts.get(pcoll, 0) * mean_sizes.get(pcoll, 0.0)
    return found


def job_figures(pipeline, result) -> dict:
    """The shuffled bytes by ``GroupByKey`` of a finished job, from its monitoring infos."""
    from apache_beam.metrics import monitoring_infos as mi

    try:
        infos = result.monitoring_infos()
    except AttributeError:  # a runner result without them
        return {}
    counts, means = {}, {}
    for info in infos:
        pcoll = info.labels.get(mi.PCOLLECTION_LABEL)
        if pcoll is None:
            continue
        if info.urn == mi.ELEMENT_COUNT_URN:
            counts[pcoll] = counts.get(pcoll, 0) + mi.extract_metric_result_map_value(info)
        elif info.urn == mi.SAMPLED_BYTE_SIZE_URN:
            value = mi.extract_metric_result_map_value(info)
            if value.count:
                means[pcoll] = value.sum / value.count
    by_gbk = shuffled_bytes(
        counts=counts, mean_sizes=means, inputs=shuffle_inputs(pipeline.to_runner_api())
    )
    return {"shuffled_bytes": sum(by_gbk.values()), "by_group_by_key": by_gbk}


def main(argv: list[str]) -> int:
    from pipeline import run

    metrics_path, *run_argv = argv
    jobs: list[dict] = []
    original = run.run_to_completion

    def counted(p, *, binding=None):
        started = time.monotonic()
        result = original(p, binding=binding)
        jobs.append({"seconds": time.monotonic() - started, **job_figures(p, result)})
        return result

    run.run_to_completion = counted
    try:
        status = run.main(run_argv)
    finally:
        with open(metrics_path, "w") as handle:
            json.dump({"jobs": jobs}, handle)
    return status or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
