import dataclasses
import re

import pytest

from tokenizer import spec


def test_reserved_ids_are_what_the_model_says(processor):
    assert processor.pad_id() == spec.PAD_ID == spec.SPECIAL_IDS["pad"] == 0
    assert processor.eos_id() == spec.EOS_ID == spec.SPECIAL_IDS["eos"] == 1
    assert processor.unk_id() == spec.UNK_ID == spec.SPECIAL_IDS["unk"] == 2
    assert processor.bos_id() == spec.BOS_ID == spec.SPECIAL_IDS["bos"] == 3
    assert [processor.id_to_piece(i) for i in range(4)] == ["<pad>", "</s>", "<unk>", "<s>"]


def test_byte_pieces_follow_the_reserved_ids(processor):
    assert processor.id_to_piece(4) == "<0x00>"
    assert processor.id_to_piece(4 + 255) == "<0xFF>"
    assert all(processor.is_byte(i) for i in range(4, 4 + spec.NUM_BYTE_PIECES))


def test_trainer_kwargs_carry_the_lossless_settings():
    kwargs = spec.TrainOptions(vocab_size=8000, seed=7).to_trainer_kwargs()
    assert kwargs["vocab_size"] == 8000
    assert kwargs["normalization_rule_name"] == "identity"
    assert kwargs["remove_extra_whitespaces"] is False
    assert kwargs["add_dummy_prefix"] is False
    assert kwargs["byte_fallback"] is True
    assert kwargs["hard_vocab_limit"] is False
    assert (kwargs["pad_id"], kwargs["eos_id"], kwargs["unk_id"], kwargs["bos_id"]) == (0, 1, 2, 3)
    assert "seed" not in kwargs  # goes through set_random_generator_seed


def test_options_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.TrainOptions().vocab_size = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    "kwargs, fix",
    [
        ({"vocab_size": 100}, "--vocab_size to at least 261"),
        ({"model_type": "word"}, "use one of"),
        ({"character_coverage": 0.0}, "(0, 1]"),
        ({"num_threads": 0}, "at least 1"),
        ({"max_sentence_length": 10}, "65536"),
        ({"input_sentence_size": -1}, "0 (all)"),
        ({"input_sentence_size": 50}, "above 100"),
    ],
)
def test_bad_options_name_the_fix(kwargs, fix):
    with pytest.raises(ValueError, match=re.escape(fix)):
        spec.TrainOptions(**kwargs)
