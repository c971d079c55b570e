"""Stage 2, Tokenize: chunks of documents -> token ids, and the tokenizer a split uses.

Owns: the Tokenize stage (``stage``, cores: ``encoding_plan``), the tokenizer's training sample
(``training_sample``), training or copying the model (``prepare``), keeping a trained one for a
rerun (``committed_model``), per-subset statistics (``subset_stats``, ``histogram``).
May import: ``pipeline.config``, ``pipeline.read``, the ``tokenizer`` library.
"""
