"""The Beam pipeline: Pile files -> tokenized, packed TFRecord shards and their manifest."""

from common.cli import hide_worker_error_tracebacks

# A worker process of Beam's local runner imports this package to run the stages; without
# PILEPACK_LOCAL_WORKER=1 (set by the launching command) this does nothing.
hide_worker_error_tracebacks()
