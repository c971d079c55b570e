"""The dataset's SentencePiece model inside the TensorFlow graph (tensorflow-text).

The only module that imports ``tensorflow_text``: loading it registers the tokenizer's ops,
which the exported SavedModel needs, so a process that loads the export imports it first.
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text

from common.errors import InputError


def sentencepiece_tokenizer(model_proto: bytes) -> tensorflow_text.SentencepieceTokenizer:
    """tf-text's tokenizer for a serialized SentencePiece model, giving the same ids as
    ``sentencepiece.SentencePieceProcessor(model_proto=...).encode`` and the same text back
    from ``detokenize`` (a test checks every document of the built-in sample).

    Normalization (identity), the dummy prefix (off) and byte fallback (on) travel inside
    the model proto; what tf-text adds on top is turned off here: no BOS or EOS appended,
    no subword sampling (``nbest_size=0``), no reversal. Raises InputError for bytes that
    are not a SentencePiece model.
    """
    try:
        return tensorflow_text.SentencepieceTokenizer(
            model=model_proto,
            out_type=tf.int32,
            nbest_size=0,
            alpha=1.0,
            reverse=False,
            add_bos=False,
            add_eos=False,
        )
    except (tf.errors.InvalidArgumentError, tf.errors.InternalError) as err:
        raise InputError("not a SentencePiece model: SentencePiece cannot parse it") from err
