"""Memory against duplication: ``--dedup=exact`` and ``--dedup=near`` over N copies of one
document (plus distinct documents), two checkouts side by side.

    python -m bench.duplication_bench --before=PATH_TO_OTHER_CHECKOUT --corpus='DIR/0*.jsonl.zst' \\
        --tokenizer_model=PATH [--copies=30000,300000] [--distinct=3000]

For each N of ``--copies`` one input is written: three files holding the first ``--distinct``
documents of the corpus and N copies of one of them (a real paragraph), interleaved, so the
copies span files and their lowest (file, line) is not the first one met. Each mode then runs
from ``--before`` and from ``--after`` (``bench.checkout_bench``: a fresh process with that
checkout first on ``sys.path``; one encoder process), and the report gives wall seconds, the
peak RSS summed over the run's process tree (``bench.process_tree``) and after / before. Every
output file of the two sides but the manifest is compared byte for byte. The goal: peak
memory flat in N.
"""

from __future__ import annotations

import argparse
import filecmp
import glob
import io
import json
import os
import shutil
import tempfile

import zstandard

from bench.checkout_bench import _run
from datagen.pile_files import write_jsonl_zst

MODES = {"exact": ["--dedup=exact"], "near": ["--dedup=near"]}
FILES = 3


def _documents(pattern: str, count: int) -> list[dict]:
    found: list[dict] = []
    for path in sorted(glob.glob(pattern)):
        with open(path, "rb") as handle:
            data = zstandard.ZstdDecompressor().stream_reader(handle).read()
        for raw in io.BytesIO(data):
            if raw.strip():
                found.append(json.loads(raw))
            if len(found) == count:
                return found
    return found


def write_input(directory: str, *, distinct: list[dict], copies: int) -> None:
    """``FILES`` files: the distinct documents and ``copies`` copies of the one with a text
    closest to 600 characters, dealt round-robin (copies of later files come first)."""
    repeated = min(distinct, key=lambda d: abs(len(d["text"]) - 600))
    rows: list[list[dict]] = [[] for _ in range(FILES)]
    for i in range(copies):
        rows[FILES - 1 - i % FILES].append(repeated)
    for i, doc in enumerate(distinct):
        rows[i % FILES].insert(len(rows[i % FILES]) * (i % 7) // 7, doc)
    os.makedirs(directory)
    for index, docs in enumerate(rows):
        write_jsonl_zst(os.path.join(directory, f"{index:02d}.jsonl.zst"), docs)


def same_outputs(a: str, b: str) -> bool:
    """Every file of two outputs but the manifest (run times) byte-identical."""
    def files(root):
        return sorted(os.path.relpath(os.path.join(d, n), root) for d, _, names in os.walk(root)
                      for n in names if n != "manifest.json")
    names = files(a)
    return bool(names) and names == files(b) and all(
        filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False) for n in names)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.duplication_bench",
                                     description=__doc__)
    parser.add_argument("--before", required=True, help="the other checkout")
    parser.add_argument("--after", default=".", help="this checkout")
    parser.add_argument("--corpus", required=True, help="Pile-format files (a glob)")
    parser.add_argument("--tokenizer_model", required=True)
    parser.add_argument("--copies", default="30000,300000", help="comma list of N")
    parser.add_argument("--distinct", type=int, default=3000)
    args = parser.parse_args(argv)
    distinct = _documents(args.corpus, args.distinct)
    workdir = tempfile.mkdtemp(prefix="pilepack-dup-")
    rows = []
    try:
        for n in (int(c) for c in args.copies.split(",")):
            inputs = os.path.join(workdir, f"in-{n}")
            write_input(inputs, distinct=distinct, copies=n)
            for mode, flags in MODES.items():
                common = ["--input", inputs, "--tokenizer_model", args.tokenizer_model,
                          "--runner=DirectRunner", "--encode_processes=1", *flags]
                sides = {}
                for side, checkout in (("before", args.before), ("after", args.after)):
                    out = os.path.join(workdir, side, "out")  # names shards: the same
                    shutil.rmtree(out, ignore_errors=True)
                    sides[side] = _run(checkout, common, out)
                same = same_outputs(os.path.join(workdir, "before", "out"),
                                    os.path.join(workdir, "after", "out"))
                (bw, _, bm), (aw, _, am) = sides["before"], sides["after"]
                rows.append((n, mode, bw, bm, aw, am, same))
                print(f"N={n:>7} {mode:5s}: before {bw:6.1f} s {bm:6.0f} MB; after {aw:6.1f} s "
                      f"{am:6.0f} MB; memory after/before {am / bm:.2f}, wall {aw / bw:.2f}; "
                      f"shards identical: {same}", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
