"""The GPT: token + position embeddings, decoder blocks, final LayerNorm, dense head."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from schemas.records import POSITIONS, SEGMENT_IDS, TOKENS
from trainer.model import kv_cache
from trainer.model.block import DecoderBlock
from trainer.model.config import GPTConfig
from trainer.model.initializers import normal_init


@keras.saving.register_keras_serializable(package="pilepack")
class GPT(keras.Model):
    """A decoder-only transformer language model (nanoGPT's ``GPT``, as a Keras 3 model).

    Inputs: a dict with ``tokens`` (B, T) and, when ``use_segments``, ``segment_ids`` and
    ``positions`` (B, T), the feature names of ``schemas.records``; or a bare (B, T) tensor of
    tokens. Output: float32 logits (B, T, vocab_size); logits[:, t] depend only on inputs at
    positions <= t (and, with segments, only on positions of the same segment).

    Constructor arguments are the fields of ``GPTConfig`` (``dtype_policy`` is Keras' ``dtype``).
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        seq_len: int,
        num_layers: int,
        num_heads: int,
        hidden_dim: int,
        intermediate_dim: int = 0,
        dropout: float = 0.0,
        layer_norm_epsilon: float = 1e-5,
        use_segments: bool = False,
        recompute: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.gpt_config = GPTConfig(
            vocab_size=vocab_size,
            seq_len=seq_len,
            num_layers=num_layers,
            num_heads=num_heads,
            hidden_dim=hidden_dim,
            intermediate_dim=intermediate_dim,
            dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            use_segments=use_segments,
            dtype_policy=self.dtype_policy.name,
            recompute=recompute,
        )
        cfg, policy = self.gpt_config, self.dtype_policy
        self.wte = keras.layers.Embedding(
            vocab_size, hidden_dim, embeddings_initializer=normal_init(), dtype=policy, name="wte"
        )
        self.wpe = keras.layers.Embedding(
            seq_len, hidden_dim, embeddings_initializer=normal_init(), dtype=policy, name="wpe"
        )
        self.drop = keras.layers.Dropout(dropout, dtype=policy)
        self.blocks = [
            DecoderBlock(
                num_heads=num_heads,
                hidden_dim=hidden_dim,
                intermediate_dim=cfg.intermediate_dim,
                dropout=dropout,
                num_layers=num_layers,
                layer_norm_epsilon=layer_norm_epsilon,
                dtype=policy,
                name=f"h_{i}",
            )
            for i in range(num_layers)
        ]
        self.ln_f = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy, name="ln_f"
        )
        self.head = keras.layers.Dense(
            vocab_size, use_bias=False, kernel_initializer=normal_init(), dtype=policy, name="head"
        )

    def build(self, input_shape):
        tokens_shape = input_shape[TOKENS] if isinstance(input_shape, dict) else input_shape
        hidden_shape = tuple(tokens_shape) + (self.gpt_config.hidden_dim,)
        self.wte.build(tokens_shape)
        self.wpe.build(tokens_shape)
        for layer in (*self.blocks, self.ln_f, self.head):
            layer.build(hidden_shape)

    def call(self, inputs, training=None):
        cfg = self.gpt_config
        tokens = inputs[TOKENS] if isinstance(inputs, dict) else inputs  # (B, T)
        segment_ids = None
        if cfg.use_segments:
            if not isinstance(inputs, dict) or SEGMENT_IDS not in inputs:
                raise ValueError(
                    "this GPT masks at document boundaries (use_segments=True) and needs "
                    f"{SEGMENT_IDS!r} and {POSITIONS!r} inputs: build the dataset with segment "
                    "ids, or train with --use_segments=false"
                )
            segment_ids = inputs[SEGMENT_IDS]  # (B, T)
            # Positions restart in every record's segments, so they are < seq_len; the clamp
            # only guards a writer that carries positions over from a previous record.
            positions = ops.minimum(inputs[POSITIONS], cfg.seq_len - 1)  # (B, T)
        else:
            positions = ops.expand_dims(ops.arange(ops.shape(tokens)[1]), 0)  # (1, T)
        x = self.drop(self.wte(tokens) + self.wpe(positions), training=training)  # (B, T, C)
        for block in self.blocks:
            x = self._run_block(block, x, segment_ids, training)  # (B, T, C)
        logits = self.head(self.ln_f(x))  # (B, T, V)
        return ops.cast(logits, "float32")

    def init_cache(self, batch_size, length):
        """An empty key/value cache for ``batch_size`` sequences of up to ``length`` tokens."""
        cfg = self.gpt_config
        return kv_cache.empty(
            num_layers=cfg.num_layers,
            batch_size=batch_size,
            num_heads=cfg.num_heads,
            length=length,
            head_dim=cfg.hidden_dim // cfg.num_heads,
            dtype=self.compute_dtype,
        )

    def call_cached(self, tokens, cache, index):
        """Logits for tokens (B, T) at positions index .. index + T - 1, reusing ``cache``.

        The decoding path: ``cache`` (``init_cache``) holds the keys and values of positions
        < index; the result is (float32 logits (B, T, V), the cache with these positions
        added), equal to ``call`` on the whole prefix at these positions. The sequence is one
        document (no segment masking, positions from 0), as a prompt is at inference.
        """
        length = ops.shape(tokens)[1]
        positions = ops.expand_dims(index + ops.arange(length), 0)  # (1, T)
        x = self.wte(tokens) + self.wpe(positions)  # (B, T, C)
        layers = []
        for block, layer_cache in zip(self.blocks, ops.unstack(cache, self.gpt_config.num_layers)):
            x, layer_cache = block.call_cached(x, layer_cache, index)  # (B, T, C)
            layers.append(layer_cache)
        logits = self.head(self.ln_f(x))  # (B, T, V)
        return ops.cast(logits, "float32"), ops.stack(layers)

    def _run_block(self, block, x, segment_ids, training):
        if not (self.gpt_config.recompute and training):
            return block(x, segment_ids=segment_ids, training=training)
        # Keep only the block's input; recompute its activations in the backward pass.
        return tf.recompute_grad(lambda h: block(h, segment_ids=segment_ids, training=training))(x)

    def get_config(self):
        fields = self.gpt_config.to_dict()
        fields.pop("dtype_policy")  # carried by Keras' own "dtype" entry
        return {**super().get_config(), **fields}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def build_model(config: GPTConfig) -> GPT:
    """A built GPT for ``config`` (create it inside ``strategy.scope()`` when distributed)."""
    fields = config.to_dict()
    model = GPT(dtype=fields.pop("dtype_policy"), **fields)
    shape = (None, config.seq_len)
    inputs = {TOKENS: shape, SEGMENT_IDS: shape, POSITIONS: shape} if config.use_segments else shape
    model.build(inputs)
    return model
