"""A written split as a whole: its manifest (the commit point), and reading it back.

Owns: the manifest built from every stage's statistics (``statistics``) and committed last
(``manifest``, ``quality_sections``), the record reader for tools (``reader``), and the checks
and views of a split: ``verify``, ``roundtrip``, ``report`` (with ``charts``); the commands of
those names parse flags and call these. May import: every pipeline sub-package but ``launch``.
"""
