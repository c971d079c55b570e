import pytest

from tokenizer.model_proto import read_model_facts


def test_facts_of_a_lossless_model(model_bytes):
    facts = read_model_facts(model_bytes)
    assert facts.model_type == "bpe"
    assert facts.byte_fallback
    assert facts.normalizer_name == "identity"
    assert facts.precompiled_charsmap_size == 0
    assert not facts.add_dummy_prefix
    assert not facts.remove_extra_whitespaces
    assert facts.escape_whitespaces
    assert not facts.treat_whitespace_as_suffix


def test_facts_of_a_default_model(default_unigram_bytes):
    facts = read_model_facts(default_unigram_bytes)
    assert facts.model_type == "unigram"
    assert not facts.byte_fallback
    assert facts.normalizer_name == "nmt_nfkc"
    assert facts.precompiled_charsmap_size > 0
    assert facts.add_dummy_prefix and facts.remove_extra_whitespaces


def test_truncated_proto_is_refused(model_bytes):
    with pytest.raises(ValueError, match="truncated"):
        read_model_facts(model_bytes[: len(model_bytes) // 2])
