"""Stage 1, Read: Pile-format input files -> chunks of parsed documents, dead letters, accounting.

Data flow: input files -> ``stage.ReadDocuments``: its step ``ReadLines`` (decompress, split
lines into ``RawChunk``s) -> ``FanOut`` (a Reshuffle, when fan-out is on) -> its step ``Parse``
(JSON, validation, the quality decisions handed in: ``Chunk``s) -> ``pipeline.tokenize``. Owns
the input list (``inputs``), decoding (``decode``), one line to one document (``parse``), the
chunk and its coder (``stage``, ``chunk_coder``). May import: ``common``, ``schemas``,
``pipeline.config``.
"""
