"""split_doc_hashes.py: every split lists its documents' hashes, and verify checks the files."""

import json

from pipeline.dataset import verify
from pipeline.quality import doc_hash


def test_a_split_lists_the_hashes_of_its_documents(tiny_dataset, tiny_input):
    doc = json.loads((tiny_dataset / "manifest.json").read_text())
    entry = doc["doc_hashes"]
    assert (entry["normalization"], entry["digest"]) == (doc_hash.NORMALIZATION, doc_hash.DIGEST)
    assert [f["path"] for f in entry["files"]] == [f"doc_hashes/{i:x}.bin" for i in range(16)]
    data = b"".join((tiny_dataset / f["path"]).read_bytes() for f in entry["files"])
    assert data == b"".join(sorted({doc_hash.doc_hash(t) for t in tiny_input["texts"]}))
    assert entry["documents"] == len(data) // 16 == doc["accounting"]["written"]


def test_verify_names_a_missing_or_damaged_hash_file(dataset_copy):
    assert verify.verify(str(dataset_copy)).problems == []
    entry = json.loads((dataset_copy / "manifest.json").read_text())["doc_hashes"]
    full = next(f["path"] for f in entry["files"][1:] if f["documents"])
    (dataset_copy / full).write_bytes((dataset_copy / full).read_bytes()[:-1])
    (dataset_copy / "doc_hashes" / "0.bin").unlink()
    problems = verify.verify(str(dataset_copy)).problems
    assert "doc_hashes/0.bin: missing" in problems
    assert any(p.startswith(f"{full}: ") and "16 bytes" in p for p in problems)
