"""The trainer refuses a dataset whose manifest fails validation, or whose shards were damaged."""

import json
import shutil

from trainer import train


def _flags(manifest_dir, model_dir):
    return [f"--train_manifest={manifest_dir}", f"--model_dir={model_dir}", "--preset=tiny",
            "--steps=1", "--global_batch_size=2"]


def test_invalid_or_damaged_manifest_is_refused_with_a_clear_message(clean_dataset, tmp_path,
                                                                    capsys):
    data = tmp_path / "data"
    shutil.copytree(clean_dataset, data)
    manifest = data / "manifest.json"
    doc = json.loads(manifest.read_text())
    good = manifest.read_text()

    doc["shards"][0]["path"] = "../escape.tfrecord"  # fails validation
    manifest.write_text(json.dumps(doc))
    assert train.main(_flags(data, tmp_path / "run1")) == 2
    err = capsys.readouterr().err
    assert "manifest" in err and "Traceback" not in err

    manifest.write_text(good)  # valid again, but a shard loses its last byte
    shard = data / json.loads(good)["shards"][0]["path"]
    shard.write_bytes(shard.read_bytes()[:-1])
    assert train.main(_flags(data, tmp_path / "run2")) == 2
    assert "bytes, the manifest says" in capsys.readouterr().err
