"""Autoregressive decoding of token ids with the GPT, with the key/value cache or without it.

Graph code (``tf.while_loop``), exported inside the SavedModel and run eagerly by
``trainer.generate``. Rows of a batch decode together, one position per step for every row:

    prompts (EOS-led ids)   [1, 7, 9]        [1, 5]
    prefill (one call)      positions 0-1 of every row: the shortest prompt's length
    step t = 2              row 0 is still in its prompt: it takes 9; row 1 takes its sample
    step t = 3, 4, ...      both rows sample

A row stops after its first EOS (not returned), after ``max_new_tokens`` new tokens, or at the
model's context of ``seq_len`` tokens, prompt included; the loop stops when every row has.
"""

from __future__ import annotations

import tensorflow as tf

from schemas.records import POSITIONS, SEGMENT_IDS, TOKENS
from trainer.export.sampling import next_token


def prefix_logits(model, tokens: tf.Tensor) -> tf.Tensor:
    """float32 logits (B, T, V) of the training path, each row one document from position 0."""
    if not model.gpt_config.use_segments:
        return model(tokens, training=False)
    shape = tf.shape(tokens)
    positions = tf.broadcast_to(tf.range(shape[1])[None], shape)  # (B, T)
    inputs = {TOKENS: tokens, SEGMENT_IDS: tf.ones_like(tokens), POSITIONS: positions}
    return model(inputs, training=False)


def _prefill(model, tokens: tf.Tensor, *, start, shape, use_cache: bool) -> tuple:
    """(logits (B, V) predicting position ``start``, the cache) from tokens[:, :start] (one call).

    The cache has room for ``shape`` (B, total), every position of ``tokens``; without
    ``use_cache`` it is an empty placeholder the loop carries unchanged.
    """
    if use_cache:
        cache = model.init_cache(*shape)
        logits, cache = model.call_cached(tokens[:, :start], cache, 0)
    else:
        cache = tf.zeros([])  # nothing to carry
        logits = prefix_logits(model, tokens[:, :start])
    return logits[:, -1], cache


def _advance(model, *, tokens: tf.Tensor, token: tf.Tensor, cache, t, use_cache: bool) -> tuple:
    """Logits (B, V) for position t + 1, having written ``token`` (B,) at position t, and the
    cache; without ``use_cache``, the whole prefix tokens[:, : t + 1] is recomputed."""
    if use_cache:
        logits, cache = model.call_cached(token[:, None], cache, t)
    else:
        logits = prefix_logits(model, tokens[:, : t + 1])
    return logits[:, -1], cache


def _before_eos(tokens: tf.Tensor, *, generated: tf.Tensor, eos_id: int) -> tf.RaggedTensor:
    """The ``generated`` (B, total) positions of ``tokens`` (B, total) before each row's first
    generated EOS, a ragged (B, None)."""
    after_eos = tf.cumsum(tf.cast(generated & (tokens == eos_id), tf.int32), axis=1) > 0
    return tf.ragged.boolean_mask(tokens, generated & ~after_eos)


# Long because: one tf.while_loop whose body and stopping test share the rows' layout (lengths,
# limits, positions, the sampling options); the model calls and the final mask are split out.
def generate_ids(
    model,
    prompt_ids: tf.RaggedTensor,
    *,
    max_new_tokens,
    temperature,
    top_k,
    top_p,
    seed,
    eos_id: int,
    use_cache: bool = True,
) -> tf.RaggedTensor:
    """New token ids (B, None) continuing each row of ``prompt_ids`` (B, None).

    Args:
        model: a ``trainer.model.GPT``.
        prompt_ids: token ids, at least one per row (``saved_model.Servable`` starts every prompt
            with EOS, the token every packed document follows). A row longer than seq_len - 1
            keeps its last seq_len - 1 tokens.
        max_new_tokens, temperature, top_k, top_p: scalars; see ``sampling.next_token``.
        seed: int64 scalar; step t samples with the stateless seed (seed, t).
        eos_id: the end-of-document id, where a row stops.
        use_cache: False recomputes the whole prefix at every step (the reference the cache
            is tested and measured against).
    """
    seq_len = model.gpt_config.seq_len
    prompt_ids = tf.cast(prompt_ids, tf.int32)[:, -(seq_len - 1) :]
    lengths = tf.cast(prompt_ids.row_lengths(), tf.int32)  # (B,)
    batch = tf.shape(lengths)[0]
    new = tf.clip_by_value(tf.cast(max_new_tokens, tf.int32), 0, seq_len)
    limits = tf.minimum(lengths + new, seq_len)  # (B,): row b ends before position limits[b]
    total = tf.reduce_max(tf.concat([limits, [1]], 0))  # positions decoded (1: empty batch)
    start = tf.maximum(tf.reduce_min(tf.concat([lengths, [total]], 0)), 1)  # prefill length
    tokens = prompt_ids.to_tensor(default_value=0, shape=tf.stack([batch, total]))  # (B, total)
    positions = tf.range(total)[None]  # (1, total)
    options = {
        "temperature": tf.cast(temperature, tf.float32),
        "top_k": tf.cast(top_k, tf.int32),
        "top_p": tf.cast(top_p, tf.float32),
    }
    seed = tf.cast(seed, tf.int64)
    logits, cache = _prefill(model, tokens, start=start, shape=(batch, total), use_cache=use_cache)

    def body(t, tokens, cache, logits, finished):
        chosen = next_token(logits, seed=tf.stack([seed, tf.cast(t, tf.int64)]), **options)
        in_prompt = t < lengths  # (B,)
        token = tf.where(in_prompt, tokens[:, t], chosen)  # (B,)
        tokens = tf.where(positions == t, token[:, None], tokens)  # (B, total)
        finished = finished | (~in_prompt & (token == eos_id)) | (t + 1 >= limits)
        more = ~tf.reduce_all(finished) & (t + 1 < total)
        logits, cache = tf.cond(
            more,
            lambda: _advance(
                model, tokens=tokens, token=token, cache=cache, t=t, use_cache=use_cache
            ),
            lambda: (logits, cache),
        )
        return t + 1, tokens, cache, logits, finished

    def cond(t, tokens, cache, logits, finished):
        return (t < total) & ~tf.reduce_all(finished)

    t, tokens, *_ = tf.while_loop(cond, body, (start, tokens, cache, logits, start >= limits))
    generated = (
        (positions >= lengths[:, None]) & (positions < limits[:, None]) & (positions < t)
    )  # (B, total)
    return _before_eos(tokens, generated=generated, eos_id=eos_id)
