"""Quality filters: the published Gopher, C4 and FineWeb rules as pure functions of a text.

``rules`` (the registry, thresholds and overrides), ``profile`` (which rules apply to which Pile
subset), one module per rule family (``gopher``, ``c4``, ``fineweb``) over ``words``. Beam-free;
``pipeline.read.parse_chunk`` applies them as it parses. May import: common (nothing of pipeline).
"""
