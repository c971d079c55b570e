"""Read every Megatron pair a manifest lists with Megatron-Core's own reader.

Run by ``tests/readers/test_megatron_reader.py`` with the readers' interpreter
(``.venv-readers``, ``requirements-readers.lock``): ``python read_megatron.py MANIFEST OUT.npz``.
Opens each pair as ``IndexedDataset(prefix)`` and saves, in the manifest's order, every
document's tokens (``tokens``, concatenated), their lengths (``lengths``), the documents per pair
(``documents``) and the dtype Megatron read (``dtype``). Imports nothing of pilepack.
"""

import json
import os
import sys
import warnings

import numpy as np


def main(manifest_path: str, out: str) -> None:
    warnings.simplefilter("ignore")  # Megatron-Core warns about missing GPU extensions
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    with open(manifest_path) as handle:
        doc = json.load(handle)
    root = os.path.dirname(manifest_path)
    tokens, lengths, documents, dtypes = [], [], [], set()
    for pair in doc["megatron"]["files"]:
        dataset = IndexedDataset(os.path.join(root, pair["prefix"]))
        documents.append(len(dataset.document_indices) - 1)
        for i in range(len(dataset)):
            sequence = dataset[i]
            dtypes.add(sequence.dtype.name)
            tokens.append(np.asarray(sequence, dtype=np.int64))
            lengths.append(len(sequence))
    np.savez(out, tokens=np.concatenate(tokens) if tokens else np.zeros(0, np.int64),
             lengths=np.array(lengths, np.int64), documents=np.array(documents, np.int64),
             dtype=np.array(sorted(dtypes)))


if __name__ == "__main__":
    main(*sys.argv[1:])
