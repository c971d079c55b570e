"""Data quality: exact and near dedup, evaluation-set decontamination, ``--exclude_docs_from``,
the subset mixture, document hashes (``split_doc_hashes``). ``plan`` decides once what the options
ask for; a pre-pass (``prepass``, launched by ``prepare``) finds the drops (``doc_hash``,
``minhash``, ``lsh``, ``components``, ``near_dup``, ``eval_sets``, ``ngrams``, ``decontaminate``,
``exclusion``) into ``decision_files``, applied by Read's Parse (``selection``, ``mixture``).
May import: ``pipeline.config``, ``pipeline.read``.
"""
