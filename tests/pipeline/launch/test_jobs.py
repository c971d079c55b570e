"""jobs.py: the Dataflow job a run submitted is recorded with the region and project it runs in,
also when Beam resolved them (no --region on the command line), so the cancel hint names them.

The service cannot be reached here: the result is Beam's own ``DataflowPipelineResult`` around
the API's ``Job`` as ``create_job`` returns it, with the options Beam validated."""

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pipeline.launch import jobs
from schemas.claim import Job

# Beam's dry run only skips the bucket checks that need the network; the region is resolved.
FLAGS = ["--runner=DataflowRunner", "--project=proj", "--temp_location=gs://pilepack-bucket/tmp",
         "--dry_run=True"]


@pytest.fixture
def dataflow_pipeline(monkeypatch, tmp_path):
    """A Dataflow pipeline without --region: Beam takes it from CLOUDSDK_COMPUTE_REGION."""
    pytest.importorskip("google.cloud.dataflow", reason="needs apache-beam[gcp]")
    monkeypatch.setenv("CLOUDSDK_COMPUTE_REGION", "europe-west4")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "no-credentials.json"))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud"))
    return beam.Pipeline(options=PipelineOptions(FLAGS))


@pytest.mark.parametrize("answer", [
    {"location": "europe-west4", "project_id": "proj"},  # as the service answers
    {},  # a Job naming no location: the region Beam resolved
], ids=["job", "options"])
def test_a_dataflow_job_is_recorded_with_the_region_beam_resolved(dataflow_pipeline, answer):
    from apache_beam.runners.dataflow.dataflow_runner import DataflowPipelineResult
    from google.cloud import dataflow

    result = DataflowPipelineResult(dataflow.Job(id="2026-12-04_01_02_03-42", **answer),
                                    dataflow_pipeline.runner, dataflow_pipeline.options)
    job = jobs.submitted_job(result, FLAGS)
    assert job == Job(kind="dataflow", id="2026-12-04_01_02_03-42", project="proj",
                      region="europe-west4")
    assert jobs.cancel_hint(job) == ("gcloud dataflow jobs cancel 2026-12-04_01_02_03-42 "
                                     "--region europe-west4 --project proj")


def test_a_cancel_hint_never_names_an_empty_region():
    hint = jobs.cancel_hint(Job(kind="dataflow", id="j", project="p", region=""))
    assert "--region REGION (the job's" in hint and "--region  " not in hint
