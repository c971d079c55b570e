"""pipeline/write/formats/registry.py: one table of the output formats drives the writer, the
run's graph, the manifest and the output directory; the generic code names no format."""

import dataclasses
import pathlib
import re
import types

import apache_beam as beam
import numpy as np
from apache_beam.testing.util import assert_that, equal_to

from pipeline import run
from pipeline.config import PipelineConfig
from pipeline.launch.output_dir import names_pattern
from pipeline.tokenize.stage import TokenizedChunk
from pipeline.write.formats import registry
from pipeline.write.formats.base import DOCUMENTS, RECORDS, OutputFormat, WriteContext
from pipeline.write.pack import Pack
from pipeline.write.parts import WriteParts
from schemas import formats as format_names
from schemas.records import RecordSpec

ROOT = pathlib.Path(__file__).resolve().parents[4]
# The generic code: it reads the table, and names no format but TFRecord.
GENERIC = ["pipeline/write/pack.py", "pipeline/write/parts.py", "pipeline/write/shards.py",
           "pipeline/write/shard_plan.py", "pipeline/write/order.py", "pipeline/run.py",
           "pipeline/dataset/manifest.py", "pipeline/dataset/format_sections.py",
           "pipeline/launch/output_dir.py", "pipeline/dataset/verify.py",
           "pipeline/dataset/roundtrip.py", "schemas/manifest.py"]
SPEC = RecordSpec(seq_len=4, token_dtype="uint16")


def test_the_table_has_a_row_per_formats_name():
    assert tuple(registry.FORMATS) == format_names.FORMATS
    assert all(cls.name == name for name, cls in registry.FORMATS.items())


def test_generic_code_names_no_format():
    names = [name for name in format_names.FORMATS if name != format_names.TFRECORD]
    pattern = re.compile("|".join([*names, "array_record"]), re.IGNORECASE)
    found = {path: pattern.findall((ROOT / path).read_text()) for path in GENERIC}
    assert not {path: words for path, words in found.items() if words}


@dataclasses.dataclass(frozen=True)
class _Echo(OutputFormat):
    """A fourth format, built from documents: each chunk's document count, as a part info."""

    name = "echo"
    built_from = DOCUMENTS
    folder = "echo"

    @classmethod
    def file_pattern(cls, numbered):
        return rf"echo/{numbered}\.echo"

    def chunk_data(self, documents, *, eos_id):
        return (np.array([len(documents)]),)

    def write_part(self, data, *, file_index, chunk_index, epoch):
        return ("echo", file_index, chunk_index, epoch, int(data[0][0]))

    def assemble(self, parts):
        return parts | "WriteEcho" >> beam.Map(lambda info: info)


@dataclasses.dataclass(frozen=True)
class _Mirror(OutputFormat):
    """A fifth, built from the shards' records."""

    name = "mirror"
    built_from = RECORDS

    @classmethod
    def file_pattern(cls, numbered):
        return rf"{numbered}\.mirror"


def _with_rows(monkeypatch):
    monkeypatch.setitem(registry.FORMATS, "echo", _Echo)
    monkeypatch.setitem(registry.FORMATS, "mirror", _Mirror)
    monkeypatch.setattr(format_names, "FORMATS", (*format_names.FORMATS, "echo", "mirror"))


def test_a_new_row_reaches_pack_and_write_parts(tmp_path, monkeypatch):
    _with_rows(monkeypatch)
    echo = _Echo(WriteContext(directory=str(tmp_path), split="t", shard_bytes=100, record=SPEC,
                              vocab_size=300))
    chunk = TokenizedChunk(3, 1, (np.array([5, 6], np.uint16), np.array([7], np.uint16)), {},
                           repeats=(1, 2))
    with beam.Pipeline() as p:
        parts = (p | beam.Create([chunk])
                 | Pack(spec=SPEC, eos_id=1, pad_id=0, last_record="pad", formats=(echo,))
                 | WriteParts(directory=str(tmp_path), spec=SPEC, pad_id=0, formats=(echo,)))
        # One part per epoch: both documents, then the one repeated twice.
        assert_that(parts["echo"], equal_to([("echo", 3, 1, 0, 2), ("echo", 3, 1, 1, 1)]))


def test_a_new_row_reaches_the_graph_and_the_output_directory(tmp_path, monkeypatch):
    _with_rows(monkeypatch)
    config = PipelineConfig(input="x.jsonl", output=str(tmp_path), split="t",
                            formats=("tfrecord", "echo", "mirror"))
    tokenizer = types.SimpleNamespace(vocab_size=300, path="m.model", eos_id=1, pad_id=0,
                                      manifest_entry=dict)
    p = beam.Pipeline()
    run.build_pipeline(p, config=config, inputs=[], tokenizer=tokenizer, fanout=False,
                       run_id="r")
    transforms = {t.unique_name: t for t in p.to_runner_api().components.transforms.values()}
    assert "echo" in transforms["WriteParts/WritePartFiles"].outputs
    echo_files = transforms["WriteEcho"].outputs["None"]
    assert echo_files in transforms["AllStatistics"].inputs.values()
    shard_formats = [type(fmt) for fmt in _assemble_fn(p)._formats]
    assert shard_formats == [_Mirror]
    ours = names_pattern(["t"])
    assert ours.match("echo/t-00000-of-00001.echo") and ours.match("t-00000-of-00001.mirror")


def _assemble_fn(p):
    found = []

    class Visitor(beam.pipeline.PipelineVisitor):
        def visit_transform(self, node):
            if node.full_label == "WriteShards/AssembleShards":
                found.append(node.transform.fn)

    p.visit(Visitor())
    return found[0]
