"""``python -m pipeline.train_tokenizer``: stratified sample -> reproducible, lossless model."""

import json

from datagen.pile_files import pile_doc, write_jsonl_zst
from pipeline import train_tokenizer as train
from tokenizer.encoder import check_lossless, load_model_bytes, processor_from_bytes


def test_cli_trains_a_reproducible_lossless_model(tmp_path, capsys):
    docs = [pile_doc(f"def f{i}(x):\n    return x * {i}  # code\n", "Github") for i in range(80)]
    docs += [pile_doc(f"Plain prose number {i}, with words and more words.", "Pile-CC")
             for i in range(80)]
    write_jsonl_zst(tmp_path / "in.jsonl.zst", docs)
    outputs = []
    for name in ("a", "b"):
        assert train.main(["--input", str(tmp_path / "in.jsonl.zst"), "--output_dir",
                           str(tmp_path / name), "--vocab_size=300",
                           "--runner=DirectRunner"]) == 0
        outputs.append((tmp_path / name / "tokenizer.model").read_bytes())
        printed = capsys.readouterr().out
    assert outputs[0] == outputs[1]  # same input, seed and options: same bytes
    entry = json.loads(printed[: printed.rindex("}") + 1])
    assert set(entry["trained"]["sample_bytes_by_subset"]) == {"Github", "Pile-CC"}
    sp = processor_from_bytes(load_model_bytes(str(tmp_path / "a" / "tokenizer.model")))
    assert check_lossless(sp) and sp.pad_id() == 0 and sp.eos_id() == 1
    assert not (tmp_path / "a" / "tokenizer_sample").exists()


def test_cli_error_is_one_line(tmp_path, capsys):
    assert train.main(["--input", str(tmp_path / "none*.zst"), "--output_dir",
                       str(tmp_path / "o")]) == 2
    assert "matches no file" in capsys.readouterr().err
