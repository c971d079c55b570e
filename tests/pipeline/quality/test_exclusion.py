"""exclusion.py: --exclude_docs_from sources resolved and checked before a run starts."""

import json

import pytest

from common.errors import ConfigError, InputError
from pipeline.quality.exclusion import resolve
from pipeline.read.inputs import expand_inputs


def test_manifests_and_raw_files(tiny_dataset, tiny_input, tmp_path):
    raw = tmp_path / "val.jsonl"
    raw.write_text('{"text": "x"}\n')
    sources = resolve((str(tiny_dataset), str(tiny_dataset / "manifest.json"), str(raw)),
                      inputs=[], output=str(tmp_path / "out"))
    assert len(sources.hash_files) == 32 and sources.hash_files[0].endswith("doc_hashes/0.bin")
    assert [f.path for f in sources.raw_files] == [str(raw)]
    with pytest.raises(ConfigError, match="is also an --input of this run"):
        resolve((str(tiny_input["dir"]),), inputs=expand_inputs(str(tiny_input["dir"])),
                output=str(tmp_path / "out"))
    with pytest.raises(ConfigError, match="this run's own --output"):
        resolve((str(tiny_dataset),), inputs=[], output=str(tiny_dataset))
    with pytest.raises(InputError, match="does not exist"):
        resolve((str(tmp_path / "nowhere"),), inputs=[], output=str(tmp_path / "out"))


def test_a_manifest_without_usable_hashes_is_refused(dataset_copy, tmp_path):
    path = dataset_copy / "manifest.json"
    doc = json.loads(path.read_text())
    damaged = next(f for f in doc["doc_hashes"]["files"] if f["documents"])
    (dataset_copy / damaged["path"]).write_bytes(b"")
    with pytest.raises(ConfigError, match=f"hash file {damaged['path']} is 0 bytes, the "
                                          f"manifest says {damaged['bytes']}"):
        resolve((str(dataset_copy),), inputs=[], output=str(tmp_path))
    doc["doc_hashes"]["digest"] = "md5"
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="its hashes are md5"):
        resolve((str(dataset_copy),), inputs=[], output=str(tmp_path))
    del doc["doc_hashes"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="lists no document hashes"):
        resolve((str(dataset_copy),), inputs=[], output=str(tmp_path))
