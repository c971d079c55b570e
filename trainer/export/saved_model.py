"""The SavedModel for serving: prompt strings in, generated strings out, all inside one graph.

Layout, beside ``export/model.keras``::

    export/saved_model/1/saved_model.pb, variables/   (1: TF Serving's version directory)

Signatures (``docs/serving.md`` has the REST calls):

- ``serving_default``: ``prompts`` (string, [B]) -> ``completions`` (string, [B]: the new
  text), ``texts`` (prompt + completion), ``num_tokens`` (int32, [B]: new tokens). Decodes
  with the ``GenerationOptions`` given at export (greedy by default): a SignatureDef has no
  optional inputs, and TF Serving requires every input a signature declares.
- ``generate``: the same outputs, with every option an input: ``max_new_tokens`` (int32),
  ``temperature``, ``top_p`` (float32), ``top_k`` (int32), ``seed`` (int64), all scalars.
- ``logits``: ``token_ids`` (int32, [B, T], T <= seq_len) -> ``logits`` (float32, [B, T, V]).

Inside: tf-text tokenizes each prompt with the dataset's own SentencePiece model, an EOS is put
in front (every packed document follows one), ``decode.generate_ids`` decodes with the
key/value cache, and tf-text detokenizes the new ids. Loading needs ``import tensorflow_text``
first (it registers the tokenizer's ops; TF Serving links them in).
"""

from __future__ import annotations

import tensorflow as tf

from common import storage
from trainer.export import decode, text
from trainer.export.options import GenerationOptions

SAVED_MODEL_DIR = "saved_model"
VERSION = "1"

_PROMPTS = tf.TensorSpec([None], tf.string, name="prompts")
_OPTIONS = {
    "max_new_tokens": tf.TensorSpec([], tf.int32, name="max_new_tokens"),
    "temperature": tf.TensorSpec([], tf.float32, name="temperature"),
    "top_k": tf.TensorSpec([], tf.int32, name="top_k"),
    "top_p": tf.TensorSpec([], tf.float32, name="top_p"),
    "seed": tf.TensorSpec([], tf.int64, name="seed"),
}


class _Decoder:
    """Holds the Keras model out of the SavedModel's object graph: the export tracks the
    model's variables (as Keras' own ExportArchive does), not its Python layers."""

    def __init__(self, model):
        self.model = model


class Servable(tf.Module):
    """The exported object: tokenizer, model variables and the three signatures.

    Args:
        model: a built ``trainer.model.GPT`` with its trained weights.
        tokenizer_proto: the dataset's ``tokenizer.model`` bytes.
        eos_id: the tokenizer's EOS id (the manifest's ``special_ids.eos``).
        defaults: decoding options of ``serving_default`` (default: ``GenerationOptions()``).
    """

    def __init__(
        self,
        *,
        model,
        tokenizer_proto: bytes,
        eos_id: int,
        defaults: GenerationOptions | None = None,
    ):
        super().__init__(name="pilepack_gpt")
        self.tokenizer = text.sentencepiece_tokenizer(tokenizer_proto)
        self.model_variables = list(model.variables)
        self._decoder = _Decoder(model)
        self._eos_id = eos_id
        self._defaults = defaults or GenerationOptions()
        self.generate = tf.function(self._generate, input_signature=[_PROMPTS, *_OPTIONS.values()])
        self.complete = tf.function(self._complete, input_signature=[_PROMPTS])
        self.logits = tf.function(
            self._logits, input_signature=[tf.TensorSpec([None, None], tf.int32, name="token_ids")]
        )

    def prompt_ids(self, prompts: tf.Tensor) -> tf.RaggedTensor:
        """EOS followed by the prompt's ids, per prompt (B, None)."""
        ids = self.tokenizer.tokenize(prompts)  # (B, None)
        eos = tf.fill([tf.shape(prompts)[0], 1], tf.constant(self._eos_id, ids.dtype))
        return tf.concat([tf.RaggedTensor.from_tensor(eos), ids], axis=1)

    def _generate(self, prompts, max_new_tokens, temperature, top_k, top_p, seed):
        new_ids = decode.generate_ids(
            self._decoder.model,
            self.prompt_ids(prompts),
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=seed,
            eos_id=self._eos_id,
        )
        completions = self.tokenizer.detokenize(new_ids)  # (B,)
        return {
            "completions": completions,
            "texts": tf.strings.join([prompts, completions]),
            "num_tokens": tf.cast(new_ids.row_lengths(), tf.int32),
        }

    def _complete(self, prompts):
        d = self._defaults
        return self._generate(
            prompts,
            tf.constant(d.max_new_tokens, tf.int32),
            tf.constant(d.temperature, tf.float32),
            tf.constant(d.top_k, tf.int32),
            tf.constant(d.top_p, tf.float32),
            tf.constant(d.seed, tf.int64),
        )

    def _logits(self, token_ids):
        return {"logits": decode.prefix_logits(self._decoder.model, token_ids)}

    def signatures(self) -> dict:
        return {"serving_default": self.complete, "generate": self.generate, "logits": self.logits}


def saved_model_path(export_dir: str) -> str:
    """Where ``write`` puts the SavedModel under ``export_dir`` (the run's ``export/``)."""
    return storage.join(export_dir, SAVED_MODEL_DIR, VERSION)


def write(servable: Servable, *, export_dir: str) -> str:
    """Save ``servable`` as ``export_dir/saved_model/1`` and return that path.

    Written beside it first and renamed into place, so a TF Serving instance watching
    ``export_dir/saved_model`` never loads half a model; an earlier export is replaced.
    """
    final = saved_model_path(export_dir)
    partial = storage.join(export_dir, SAVED_MODEL_DIR, f".partial-{VERSION}")
    for path in (partial, final):
        if tf.io.gfile.exists(path):
            tf.io.gfile.rmtree(path)
    tf.saved_model.save(servable, partial, signatures=servable.signatures())
    tf.io.gfile.rename(partial, final)
    return final


def resolve(path: str) -> str:
    """The SavedModel at ``path``: itself, or its newest numbered version directory (TF
    Serving's layout, such as ``export/saved_model``)."""
    if tf.io.gfile.exists(storage.join(path, "saved_model.pb")):
        return path
    versions = (
        [name.rstrip("/") for name in tf.io.gfile.listdir(path) if name.rstrip("/").isdigit()]
        if tf.io.gfile.isdir(path)
        else []
    )
    if not versions:
        raise FileNotFoundError(
            f"{path}: no saved_model.pb here or in a numbered version directory below it "
            "(--export_dir is a run's export/saved_model, or one version of it)"
        )
    return storage.join(path, max(versions, key=int))
