"""Data quality: exact and near dedup, decontamination, ``--exclude_docs_from``, the mixture.

A pre-pass (``prepass``, launched by ``prepare``) finds exact duplicates (``doc_hash``), near ones
(``minhash``, ``lsh``, ``components``, ``near_dup``) and evaluation overlap (``eval_sets``,
``ngrams``, ``decontaminate``) into ``decision_files`` that Parse applies (``selection``,
``mixture``); written documents' hashes: ``split_doc_hashes``. May import: config, read.
"""
