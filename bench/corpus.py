"""The benchmarks' input: a Pile-format corpus named by flag, else the built-in sample."""

from __future__ import annotations


def corpus_spec(corpus: str | None) -> str:
    """``corpus`` itself, or for an empty one the built-in sample's train files (a comma list).

    The sample (``datagen.sample.cache``) is built on first use and cached.
    """
    if corpus:
        return corpus
    from datagen.sample.cache import ensure_sample

    return ",".join(ensure_sample().train_paths)


def corpus_texts(corpus: str) -> list[str]:
    """The text of every document in ``corpus`` (comma list of files, globs or directories)."""
    # Imported on use: pipeline.read.stage loads Beam, which --help does not need.
    from pipeline.config import ReadConfig
    from pipeline.read.inputs import expand_inputs
    from pipeline.read.stage import iter_documents

    config = ReadConfig()
    return [
        doc.text for file in expand_inputs(corpus) for doc in iter_documents(file, config=config)
    ]
