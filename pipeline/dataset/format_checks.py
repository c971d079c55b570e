"""What ``verify`` and ``roundtrip`` check of each extra output format: one row per format.

The dataset side of ``pipeline.write.formats.registry`` (whose formats write the files; ``write``
cannot import the checks from here). A format's checks are its own module in this package
(``megatron_files``, ``arrayrecord_check``) and its row below; ``verify`` and ``roundtrip`` only
iterate over the table. Each check returns no problems for a dataset written without its format.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterator

from pipeline.dataset import arrayrecord_check, megatron_files
from pipeline.write.formats.registry import FORMATS
from schemas import manifest as manifest_lib
from schemas.formats import ARRAYRECORD, MEGATRON


@dataclasses.dataclass(frozen=True)
class FormatChecks:
    # (dataset, bad_shards) -> problems of its files (bad_shards: TFRecord shards that failed
    # their own check, so a format built from records is not compared with them)
    verify: Callable[[manifest_lib.Dataset, Collection[str]], list[str]]
    # (the shards' decoded documents, dataset, problems, max_reports) -> the same documents, in
    # order, while its own documents are compared with them (a format built from documents)
    documents: Callable[..., Iterator] | None = None
    # dataset -> mismatches, after the documents (a format built from the shards' records)
    records: Callable[[manifest_lib.Dataset], list[str]] | None = None


CHECKS: dict[str, FormatChecks] = {
    MEGATRON: FormatChecks(
        verify=lambda dataset, bad_shards: megatron_files.pair_problems(dataset),
        documents=megatron_files.matching_records),
    ARRAYRECORD: FormatChecks(
        verify=lambda dataset, bad_shards: arrayrecord_check.check_files(
            dataset, bad_shards=bad_shards),
        records=arrayrecord_check.check_files),
}


def listed_paths(doc: dict) -> set[str]:
    """Every file the manifest lists for its extra formats."""
    return {entry["path"] for cls in FORMATS.values() for entry in cls.listed_entries(doc)}


def verify_problems(dataset: manifest_lib.Dataset, *, bad_shards: Collection[str]) -> list[str]:
    return [problem for checks in CHECKS.values() for problem in checks.verify(dataset,
                                                                              bad_shards)]


def checked_documents(decoded: Iterator, dataset: manifest_lib.Dataset, *, problems: list,
                      max_reports: int) -> Iterator:
    """``decoded`` (the shards' documents), passed through each format built from documents
    that the dataset has, which compares its own with them in order."""
    for name, checks in CHECKS.items():
        if checks.documents is not None and name in dataset.doc:
            decoded = checks.documents(decoded, dataset, problems=problems,
                                       max_reports=max_reports)
    return decoded


def record_mismatches(dataset: manifest_lib.Dataset) -> list[str]:
    return [problem for checks in CHECKS.values() if checks.records is not None
            for problem in checks.records(dataset)]
