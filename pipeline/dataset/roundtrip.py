"""``python -m pipeline.roundtrip --manifest PATH``: decode a split and compare with its input.

Re-reads the input files the manifest lists (with the run's own read options), decodes every
document back from the shards (``pipeline.dataset.reader.iter_documents``) and checks that the texts
are equal, in order per input file. This is the strongest check a dataset can pass: nothing
lost, nothing reordered, the tokenizer lossless on this data.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from common.errors import InputError
from pipeline.config import ReadConfig
from pipeline.dataset import format_checks
from pipeline.dataset.quality_sections import roundtrip_refusal
from pipeline.dataset.reader import iter_documents as iter_written_documents
from pipeline.read.inputs import InputFile
from pipeline.read.stage import Chunk, DeadLetter, read_file
from schemas import manifest as manifest_lib
from tokenizer.spec import SPACE_SYMBOL


@dataclasses.dataclass
class RoundTrip:
    documents: int = 0
    lossy: int = 0  # decoded with U+2581 as a space: only with a model without byte pieces
    mismatches: list = dataclasses.field(default_factory=list)


def input_texts(doc: dict):
    """(file, line, text) of every written document, from the input files, in order."""
    read = ReadConfig.from_json(doc["config"]["read"])
    for index, entry in enumerate(doc["inputs"]):
        file = InputFile(index=index, path=entry["path"], bytes=entry["bytes"])
        for item in read_file(file, config=read):
            if isinstance(item, DeadLetter) and item.reason == "unreadable_file":
                raise InputError(f"input {file.path} of the split cannot be read any more: "
                                 f"{item.detail}; round-trip needs the original input files")
            if isinstance(item, Chunk):
                for document in item.documents:
                    yield file.path, document.line, document.text


def check(manifest_path: str, *, max_reports: int = 10, check_ids: bool = False,
          encoder: str = "sentencepiece") -> RoundTrip:
    """Decode the split and compare it with its input files.

    ``check_ids`` also compares every document's ids with the documented encoding
    (``tokenizer.backends``: ``SentencePieceProcessor.encode``, U+2581 as its byte pieces),
    computed by ``encoder``: ``sentencepiece`` (the library itself), or another backend.
    """
    import sentencepiece as spm

    from tokenizer.backends import open_backend, reference_backend
    from tokenizer.encoder import load_model_bytes

    dataset = manifest_lib.load(manifest_path)
    refusal = roundtrip_refusal(dataset.doc)
    if refusal:
        raise InputError(f"{dataset.manifest_path}: {refusal}")
    problem = dataset.tokenizer_file_problem()
    if problem:
        raise manifest_lib.ManifestError(f"{dataset.manifest_path}: {problem}")
    model = load_model_bytes(dataset.tokenizer_path)
    sp = spm.SentencePieceProcessor(model_proto=model)
    reference = None
    if check_ids:
        reference = (reference_backend(model_proto=model, processor=sp, num_threads=0)
                     if encoder == "sentencepiece" else
                     open_backend(encoder, model_proto=model, num_threads=0).backend)
    result = RoundTrip()
    # The extra formats' documents too, against the records' (same order).
    decoded = format_checks.checked_documents(iter_written_documents(dataset), dataset,
                                              problems=result.mismatches,
                                              max_reports=max_reports)
    batch: list[tuple[str, int, str, object]] = []  # compared in order, encoded together
    batch_chars = 0

    def compare_batch():
        expected = (reference.encode_batch([text for _, _, text, _ in batch])
                    if reference is not None else [None] * len(batch))
        for (path, line, text, ids), want in zip(batch, expected):
            _compare(result, path=path, line=line, text=text, ids=ids, expected=want, sp=sp,
                     max_reports=max_reports)
        batch.clear()

    for path, line, text in input_texts(dataset.doc):
        ids = next(decoded, None)
        if ids is None:
            compare_batch()
            result.mismatches.append(f"{path} line {line}: missing from the shards")
            break
        batch.append((path, line, text, ids))
        batch_chars += len(text)
        if batch_chars >= _BATCH_CHARS:
            compare_batch()
            batch_chars = 0
    compare_batch()
    if next(decoded, None) is not None:
        result.mismatches.append("the shards hold more documents than the input")
    result.mismatches += format_checks.record_mismatches(dataset)  # the same records
    return result


_BATCH_CHARS = 4 << 20  # text encoded in one multi-threaded call by --check_ids


def _compare(result: RoundTrip, *, path, line, text, ids, expected, sp, max_reports) -> None:
    result.documents += 1
    if (expected is not None and not np.array_equal(ids, expected)
            and len(result.mismatches) < max_reports):
        result.mismatches.append(f"{path} line {line}: ids differ from the documented encoding "
                                 "(SentencePieceProcessor.encode, U+2581 as byte pieces)")
    decoded_text = sp.decode(ids.tolist())
    if decoded_text == text:
        return
    if SPACE_SYMBOL in text and decoded_text == text.replace(SPACE_SYMBOL, " "):
        result.lossy += 1  # only a model without byte pieces still loses U+2581
    elif len(result.mismatches) < max_reports:
        result.mismatches.append(f"{path} line {line}: decoded text differs")
