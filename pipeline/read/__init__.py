"""Stage 1, Read: Pile-format input files -> chunks of parsed documents, dead letters, accounting.

``stage.ReadDocuments``: ``ReadLines`` (decompress, split lines) -> ``FanOut`` (when on) ->
``Parse`` (JSON, validation, the quality decisions handed in) -> ``pipeline.tokenize``. Owns the
input list (``inputs``), decoding (``decode``), one line to one document (``parse``), the chunk
and its coder (``stage``, ``chunk_coder``). May import: common, schemas, ``pipeline.config``.
"""
