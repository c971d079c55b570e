"""Encoder processes for ``pipeline.tokenize``'s pool: deliberately free of Beam imports.

A spawned worker imports only this module (plus numpy and sentencepiece), so it starts in a
fraction of a second; one ``CachedEncoder`` per process, built once by the initializer.
"""

from __future__ import annotations

import os
import threading
import time

_ENCODER = None  # one per pool process


def init(model_proto: bytes, parent: int) -> None:
    """Pool initializer: build this process's encoder; exit once ``parent`` (a pid) is gone.

    The parent's pid is passed in rather than read here: a parent killed while this process
    was still starting would already be replaced by the reaper, and it would wait forever.
    """
    global _ENCODER

    # A SIGKILLed pipeline cannot shut its pool down: exit when the parent is gone.
    def watch_parent():
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch_parent, daemon=True).start()
    from tokenizer.encoder import CachedEncoder

    _ENCODER = CachedEncoder(model_proto=model_proto, num_threads=1)


def encode(texts: list[str]):
    return _ENCODER.encode_batch(texts)


def warm_up() -> int:
    return os.getpid()
