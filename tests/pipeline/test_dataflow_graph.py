"""``pipeline.run``'s graph as the Dataflow job it would submit, offline.

Apache Beam's real ``DataflowRunner`` builds the job from the pipeline that ``pipeline.run``
builds, with Beam's dry run (``TestOptions.dry_run``: everything but the submission), with no
credentials and no network. The launcher's own steps before it (listing the inputs, copying
the tokenizer into ``--output``) run on local paths here: they are the same functions for every
runner, and ``tests/robustness/test_gcs.py`` runs them on ``gs://`` against a GCS emulator.
The test checks the job: its steps and how they connect, the SDK image, and that its graph
loads back the way Dataflow's workers load it (every DoFn unpickled).
"""

from __future__ import annotations

import pathlib
import socket
import sys
import tarfile

import pytest

from pipeline import run

REPO = pathlib.Path(__file__).resolve().parents[2]
IMAGE = "us-central1-docker.pkg.dev/project/repo/pilepack-beam:2.77.0"
# The Beam flags of the command in docs/distributed.md ("Dataflow").
DATAFLOW_FLAGS = [
    "--runner=DataflowRunner", "--project=project", "--region=us-central1",
    "--temp_location=gs://bucket/tmp", "--job_name=pilepack-train",
    "--num_workers=16", "--max_num_workers=16", "--autoscaling_algorithm=NONE",
    "--machine_type=n2-standard-8", "--disk_size_gb=50",
]
# pipeline.run's stages in the order the data flows through them (docs/distributed.md).
CHAIN = ["ListInputs", "Read/ReadLines", "Read/FanOut", "Read/Parse", "Tokenize", "Pack",
         "WriteParts", "AllParts", "WriteShards", "AllStatistics", "Manifest"]
STEPS = {"WriteShards/PlanShards", "WriteShards/SpreadShards", "WriteShards/AssembleShards",
         "DeadLetters", "DocHashes", "Manifest/WriteManifest"}
GROUP_BY_KEY = "beam:transform:group_by_key:v1"


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No credentials to find, and no connection beyond this machine: the attempts made."""
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "no-credentials.json"))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud"))
    attempts = []
    connect = socket.socket.connect

    def loopback_only(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not (
                address[0].startswith("127.") or address[0] in ("::1", "localhost")):
            attempts.append(address)
            raise OSError(f"no network in this test ({address})")
        return connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)
    yield attempts
    assert attempts == [], "the dry run tried to reach the network"


def dataflow_job(tmp_path, tiny_input, tiny_model, *flags: str):
    """(the Dataflow job, its pipeline) for ``pipeline.run`` with ``flags``, as the launcher
    (``pipeline.run.run_split``) builds it, run with Beam's dry run."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipeline.launch.beam_options import fanout_enabled, runs_in_one_process
    from pipeline.read.inputs import expand_inputs
    from pipeline.tokenize.prepare import prepare_tokenizer
    from pipeline.write.committed_parts import CommittedParts

    config, beam_args = run.parse([
        "--input", str(tiny_input["dir"]), "--output", str(tmp_path / "train"),
        "--tokenizer_model", str(tiny_model), "--seq_len=2048", *DATAFLOW_FLAGS, *flags])
    inputs = expand_inputs(config.input)
    tokenizer = prepare_tokenizer(config=config, inputs=inputs, beam_args=beam_args)
    # pipeline.run's own --dry_run (the cost estimate) hides Beam's: set it here.
    p = beam.Pipeline(options=PipelineOptions([*beam_args, "--dry_run=True"]))
    run.build_pipeline(p, config=config, inputs=inputs, tokenizer=tokenizer,
                       fanout=fanout_enabled(config.fanout, beam_args), run_id="0" * 32,
                       whole_machine=runs_in_one_process(beam_args),
                       committed=CommittedParts(directory=config.output, fingerprint="f" * 64),
                       resumed={"prepass_reused": False, "tokenizer_reused": False})
    result = p.run()
    result.wait_until_finish()
    return result.job, p


def feeds(graph, upstream: str, downstream: str) -> bool:
    """Whether a PCollection made by ``upstream`` (or a step inside it) is read by
    ``downstream`` (or a step inside it)."""
    def under(name: str):
        return [t for t in graph.components.transforms.values()
                if t.unique_name == name or t.unique_name.startswith(name + "/")]

    made = {pc for t in under(upstream) for pc in t.outputs.values()}
    return any(pc in made for t in under(downstream) for pc in t.inputs.values())


def images(graph) -> list[str]:
    from apache_beam.portability.api import beam_runner_api_pb2

    return [beam_runner_api_pb2.DockerPayload.FromString(e.payload).container_image
            for e in graph.components.environments.values()]


def test_the_documented_command_becomes_a_dataflow_job(tmp_path, tiny_input, tiny_model,
                                                       offline):
    from apache_beam.pipeline import Pipeline

    job, p = dataflow_job(tmp_path, tiny_input, tiny_model,
                          f"--sdk_container_image={IMAGE}", "--sdk_location=container")
    assert job.proto.name == "pilepack-train"
    assert job.proto.type_.name == "JOB_TYPE_BATCH"
    graph = job.proto_pipeline
    names = {t.unique_name for t in graph.components.transforms.values()}
    assert set(CHAIN) | STEPS <= names
    for upstream, downstream in zip(CHAIN, CHAIN[1:]):
        assert feeds(graph, upstream, downstream), (upstream, downstream)
    for side in ("DeadLetters", "DocHashes", "Read/AllStats"):  # the manifest waits for them
        assert feeds(graph, side, "AllStatistics"), side
    # A dead run's committed chunks, from Read straight to the parts, hashes and statistics.
    assert feeds(graph, "Read/ReadLines", "Reuse")
    for joined in ("AllParts", "DocHashes", "AllStatistics"):
        assert feeds(graph, "Reuse", joined), joined
    for shuffle in ("Read/FanOut/", "WriteShards/SpreadShards/"):  # shuffles, not fused steps
        assert any(t.spec.urn == GROUP_BY_KEY and t.unique_name.startswith(shuffle)
                   for t in graph.components.transforms.values()), shuffle
    assert images(graph) == [IMAGE]

    # Dataflow's workers rebuild the pipeline from this graph: every DoFn unpickles.
    rebuilt = Pipeline.from_runner_api(graph, p.runner, p._options)
    assert {t.full_label for t in rebuilt.transforms_stack[0].parts} >= {"Read", "Manifest"}


def test_setup_file_ships_the_package_to_dataflow(tmp_path, tiny_input, tiny_model, offline):
    """``--setup_file=./setup.py``: the job carries an sdist of this package, for Beam's SDK
    image of the launcher's Beam and Python versions to install."""
    from apache_beam.portability.api import beam_runner_api_pb2
    from apache_beam.version import __version__ as beam_version

    job, _ = dataflow_job(tmp_path, tiny_input, tiny_model, f"--setup_file={REPO / 'setup.py'}")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    (image,) = images(job.proto_pipeline)
    assert image.endswith(f"/beam_python{python}_sdk:{beam_version}")
    (environment,) = job.proto_pipeline.components.environments.values()
    staged = {}
    for artifact in environment.dependencies:
        path = beam_runner_api_pb2.ArtifactFilePayload.FromString(artifact.type_payload).path
        name = beam_runner_api_pb2.ArtifactStagingToRolePayload.FromString(
            artifact.role_payload).staged_name
        staged[name] = path
    with tarfile.open(staged["workflow.tar.gz"]) as sdist:  # its content: tests/test_docker.py
        assert any(name.endswith("/pipeline/run.py") for name in sdist.getnames())
