"""Rank, world size, chief-ness and the gradient all-reduce: one small abstraction, four backends.

``Backend`` is all the training loop knows about distribution. ``make_backend`` builds one by
name; ``resolve.py`` turns ``--backend=auto`` and the cluster environment into a name and a
cluster description (the entry point reads the environment, never this package).
"""

from trainer.distribute.base import Backend, BackendUnavailable
from trainer.distribute.resolve import (
    BACKENDS,
    backend_from_env,
    cluster_from_env,
    make_backend,
    resolve_backend_name,
)

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendUnavailable",
    "backend_from_env",
    "cluster_from_env",
    "make_backend",
    "resolve_backend_name",
]
