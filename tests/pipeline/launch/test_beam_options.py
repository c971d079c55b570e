"""beam_options.py: Beam's own flags pass, typos are returned; the runner read the Beam way;
``pipeline.run`` refuses a typo before it touches --output."""

import pytest

from common.flags import flag_names
from pipeline import run
from pipeline.launch.beam_options import (
    beam_parser,
    is_direct_runner,
    refuse_unknown_args,
    runner_name,
    unknown_beam_args,
)

BEAM_ARGS = [
    ["--runner=DirectRunner"],
    ["--runner", "FlinkRunner"],
    ["--direct_num_workers=2"],
    ["--direct_running_mode", "multi_processing"],
    ["--project=my-project"],
    ["--temp_location=gs://bucket/tmp"],
    ["--flink_master=localhost:8081"],
    ["--setup_file=./setup.py"],
]


@pytest.mark.parametrize("args", BEAM_ARGS, ids=lambda args: args[0].split("=")[0])
def test_beam_flags_are_known(args):
    assert unknown_beam_args(args) == []


def test_beam_flags_together_are_known():
    assert unknown_beam_args([arg for args in BEAM_ARGS for arg in args]) == []


@pytest.mark.parametrize("args, unknown", [
    (["--runer=DirectRunner"], ["--runer=DirectRunner"]),
    (["--runner=DirectRunner", "--seq_length=1024"], ["--seq_length=1024"]),
    (["--direct_num=2"], ["--direct_num=2"]),  # no abbreviations
    (["--project=p", "stray"], ["stray"]),
])
def test_typos_are_returned(args, unknown):
    assert unknown_beam_args(args) == unknown


def test_beam_flag_names():
    names = flag_names(beam_parser())  # what refuse_unknown_args suggests from
    assert {"--runner", "--direct_num_workers", "--temp_location", "--setup_file"} <= set(names)
    assert "--seq_len" not in names  # pilepack's own flags are not Beam's


def test_a_typo_of_a_beam_flag_is_named_with_the_beam_flag(capsys):
    refuse_unknown_args(run.build_parser(), ["--runner=DirectRunner", "--direct_num_workers=2"])
    with pytest.raises(SystemExit) as exit_info:
        refuse_unknown_args(run.build_parser(), ["--runner=DirectRunner", "--temp_locaton=/t"])
    assert exit_info.value.code == 2
    assert "--temp_locaton (did you mean --temp_location?)" in capsys.readouterr().err


@pytest.mark.parametrize("args, name, direct", [
    ([], "DirectRunner", True),
    (["--runner=DirectRunner"], "DirectRunner", True),
    (["--runner=direct"], "DirectRunner", True),
    (["--runner=directrunner"], "DirectRunner", True),  # Beam matches names without case
    (["--runner=Direct"], "DirectRunner", True),
    (["--runner=switchingdirect"], "SwitchingDirectRunner", True),
    (["--runner=dataflow", "--project=p"], "DataflowRunner", False),
    (["--runner=PrismRunner"], "PrismRunner", False),
    (["--runner=my.module.CustomRunner"], "CustomRunner", False),
    (["--runner", "FlinkRunner", "--flink_master=localhost:8081"], "FlinkRunner", False),
    (["--runner=DataflowRunner", "--project=p"], "DataflowRunner", False),
])
def test_runner_name_and_is_direct_runner(args, name, direct):
    assert runner_name(args) == name
    assert is_direct_runner(args) is direct


def test_run_refuses_a_typo_before_creating_the_output(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "hello"}\n')
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        run.main(["--input", str(source), "--output", str(out), "--seq_length=1024"])
    assert exit_info.value.code == 2
    assert "--seq_length (did you mean --seq_len?)" in capsys.readouterr().err
    assert not out.exists()
