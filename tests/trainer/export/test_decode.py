"""trainer/export/decode.py: where rows stop, and the cache changes nothing (greedy, trained)."""

import numpy as np
import pytest
import tensorflow as tf

from trainer.export import decode
from trainer.export.text import sentencepiece_tokenizer
from trainer.model import GPTConfig, build_model

EOS = 1
PROMPTS = [[EOS, 5, 6], [EOS, 5, 6, 8, 9, 10, 11, 12, 13, 14]]  # 3 and 10 tokens


def always(token: int, *, seq_len: int = 16):
    """A model whose every logit row peaks at ``token`` (final LayerNorm -> ones, one-hot head)."""
    model = build_model(GPTConfig.from_preset("tiny", vocab_size=40, seq_len=seq_len))
    model.ln_f.gamma.assign(tf.zeros_like(model.ln_f.gamma))
    model.ln_f.beta.assign(tf.ones_like(model.ln_f.beta))
    model.head.kernel.assign(tf.one_hot(tf.fill([64], token), 40, axis=-1))
    return model


@pytest.fixture(scope="module")
def sevens():
    return always(7)


_GRAPHS: dict = {}


def generate(model, prompts=PROMPTS, *, use_cache=True, graph=False, **options):
    """``decode.generate_ids``; with ``graph``, in a tf.function as the export runs it (traced
    once per model: worth it for long generations only)."""
    defaults = {"max_new_tokens": 100, "temperature": 0.0, "top_k": 0, "top_p": 1.0, "seed": 0}
    options = {name: tf.constant(value) for name, value in {**defaults, **options}.items()}
    prompt_ids = tf.ragged.constant(prompts, dtype=tf.int32)
    if not graph:
        return decode.generate_ids(
            model, prompt_ids, eos_id=EOS, use_cache=use_cache, **options
        ).to_list()
    key = (id(model), use_cache)
    if key not in _GRAPHS:
        _GRAPHS[key] = tf.function(
            lambda ids, o: decode.generate_ids(model, ids, eos_id=EOS, use_cache=use_cache, **o)
        )
    return _GRAPHS[key](prompt_ids, options).to_list()


@pytest.mark.parametrize("use_cache", [True, False])
def test_rows_stop_at_the_context_at_max_new_tokens_and_at_eos(sevens, use_cache):
    model = sevens
    assert generate(model, use_cache=use_cache) == [[7] * 13, [7] * 6]  # 16 - 3, 16 - 10
    assert generate(model, max_new_tokens=4, use_cache=use_cache) == [[7] * 4] * 2
    assert generate(model, max_new_tokens=0, use_cache=use_cache) == [[], []]
    assert generate(always(EOS), use_cache=use_cache) == [[], []]  # EOS is not returned


def test_a_prompt_longer_than_the_context_keeps_its_end(sevens):
    assert generate(sevens, [list(range(4, 24))]) == [[7]]  # 15 prompt tokens kept + 1


def test_greedy_with_the_cache_equals_recomputing_the_prefix(trained_run):
    run = trained_run
    tokenizer = sentencepiece_tokenizer(run.tokenizer_proto)
    texts = ["", "The", "def main(argv):\n    ", "In 1990, the city of"]
    prompts = [[EOS, *ids] for ids in tokenizer.tokenize(tf.constant(texts)).to_list()]
    cached = generate(run.model, prompts, graph=True)  # up to EOS or the 64-token context
    assert all(cached) and sum(map(len, cached)) > 100
    assert cached == generate(run.model, prompts, use_cache=False, graph=True)


def test_sampling_follows_the_seed(trained_run):
    model = trained_run.model
    options = {"temperature": 1.0, "top_k": 50, "top_p": 0.9, "max_new_tokens": 20}
    first = generate(model, **options, seed=5, graph=True)
    assert first == generate(model, **options, seed=5, graph=True)
    assert first != generate(model, **options, seed=6, graph=True)
    assert np.all([len(ids) <= 20 for ids in first])
