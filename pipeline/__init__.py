"""The Beam pipeline: Pile files -> tokenized, packed TFRecord shards and their manifest."""

from common.cli import hide_worker_error_tracebacks

# In a worker process of Beam's local runner this package is imported to run the stages.
hide_worker_error_tracebacks()
