"""Data quality: exact dedup, ``--exclude_docs_from``, the subset mixture, document hashes.

Data flow: a pre-pass (``prepass``, launched by ``prepare``) decides which documents drop and
writes per-file decision files; Read's Parse applies them per chunk (``selection``), with the
mixture's repeat counts (``mixture``); the written documents' hashes go next to the manifest
(``write_doc_hashes``, ``doc_hash_files``). May import: ``pipeline.config``, ``pipeline.read``.
"""
