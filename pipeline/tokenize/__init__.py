"""Stage 2, Tokenize: chunks of documents -> token ids, and the tokenizer a split uses.

Owns: the Tokenize stage (``stage``) and how it uses a worker's cores (``encoding_plan``), the
tokenizer's stratified training sample (``training_sample``), training or copying the model
(``prepare``) and keeping a trained one for a rerun (``committed_model``), and the per-subset
statistics counted while tokenizing (``subset_stats``, ``histogram``). May import: ``pipeline.config``, ``pipeline.read``, the ``tokenizer`` library.
"""
