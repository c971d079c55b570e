"""The training and evaluation input: which records each step reads, and how they are read.

``train_input`` settles a run's order (``--order``, ``--order_block``, ``--order_window``,
``--seed``; what a resume keeps and what ``run.json`` records) and builds the distributed
batches. ``--order=global`` (the default): ``global_order`` (one sample order for any number of
ranks), ``window_order`` (the record at each stream position), ``record_source`` (ranged reads
at computed offsets) and ``block_cache`` (blocks kept while their window is read).
``--order=files`` and evaluation: ``files`` (tf.data of each rank's shards). ``batches`` holds
what both orders share: the per-replica batch and a batch's model inputs and labels.
"""
