"""Data quality: exact and near dedup, evaluation-set decontamination, ``--exclude_docs_from``,
the subset mixture, document hashes.

Data flow: a pre-pass (``prepass``, launched by ``prepare``) decides which documents drop:
exact duplicates by document hash (``doc_hash``), near duplicates by MinHash-LSH (``minhash``,
``lsh``, ``components``, ``near_dup``), evaluation-set overlap by n-grams (``eval_sets``,
``ngrams``, ``decontaminate``) and other splits' documents (``exclusion``); it writes per-file
decision files (``decision_files``). Read's Parse applies them per chunk (``selection``), with
the mixture's repeat counts (``mixture``); the written documents' hashes go next to the manifest
(``split_doc_hashes``). May import: ``pipeline.config``, ``pipeline.read``.
"""
