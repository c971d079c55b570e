"""The shuffled bytes a benchmark reads from Beam's monitoring infos."""

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from bench.counted_run import job_figures, shuffled_bytes


def test_shuffled_bytes_sums_count_times_mean_size_per_group_by_key():
    found = shuffled_bytes(
        counts={"a": 10, "b": 4, "c": 7},
        mean_sizes={"a": 3.0, "b": 5.5, "c": 1.0},
        inputs={"a": "G1", "b": "G1", "c": "G2", "d": "G3"},
    )
    assert found == {"G1": 10 * 3.0 + 4 * 5.5, "G2": 7.0, "G3": 0.0}


def test_a_real_job_reports_what_its_group_by_key_took_in():
    p = beam.Pipeline(options=PipelineOptions(["--runner=DirectRunner"]))
    _ = (
        p
        | beam.Create(list(range(2000)), reshuffle=False)
        | beam.Map(lambda x: (x % 10, "x" * 200))
        | "G" >> beam.GroupByKey()
        | beam.MapTuple(lambda key, values: len(list(values)))
    )
    result = p.run()
    result.wait_until_finish()
    figures = job_figures(p, result)
    # 2,000 elements of a 1-byte key and a 200-character value, each with a few bytes of
    # framing (Beam samples their sizes: all equal here).
    assert set(figures["by_group_by_key"]) == {"G"}
    assert 2000 * 200 < figures["shuffled_bytes"] < 2000 * 230
