"""Encoder processes for ``pipeline.tokenize.stage``'s pool: deliberately free of Beam imports.

A spawned worker imports only this module (plus numpy, sentencepiece and the backend's own
library), so it starts in a fraction of a second; one ``tokenizer.guard.ChunkEncoder`` per
process, built once by the initializer.
"""

from __future__ import annotations

import os
import threading
import time

_ENCODER = None  # one per pool process


def init(model_proto: bytes, parent: int, options: dict) -> None:
    """Pool initializer: build this process's encoder; exit once ``parent`` (a pid) is gone.

    The parent's pid is passed in rather than read here: a parent killed while this process
    was still starting would already be replaced by the reaper, and it would wait forever.

    Args:
      model_proto: The serialized SentencePiece model.
      parent: The pid to watch.
      options: Keyword arguments of ``ChunkEncoder`` (encoder, check_every, on_mismatch).
    """
    global _ENCODER

    # A SIGKILLed pipeline cannot shut its pool down: exit when the parent is gone.
    def watch_parent():
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch_parent, daemon=True).start()
    from tokenizer.guard import ChunkEncoder

    _ENCODER = ChunkEncoder(model_proto=model_proto, num_threads=1, **options)


def encode(texts: list[str], path: str, lines: list[int]):
    """(ids, EncodeStats) of one chunk; see ``ChunkEncoder.encode``."""
    return _ENCODER.encode(texts, path=path, lines=lines)


def warm_up() -> int:
    return os.getpid()
