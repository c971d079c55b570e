"""The dataset report's near-duplicate and contamination sections (``pipeline.dataset.report``).

Drawn from the manifest's ``quality`` block (``pipeline.dataset.quality_sections``), only when
it holds them:

* **Near duplicates** (``quality.near_dup``, ``--dedup=near``): the options (the manifest's
  ``config.quality``), the pair counts, the cluster-size histogram (chart and table), the
  documents removed per subset (``quality.removed.near_duplicate``) and the example pairs: the
  kept and the dropped document's input file and line, and their estimated Jaccard. The
  manifest holds no text (it is metadata, and small): an excerpt is the input file's line.
* **Contamination** (``quality.decontamination``, ``--decontaminate``): per evaluation set
  its passages, n-grams and the documents that held them; per subset the documents dropped or
  redacted, the spans and characters cut (``quality.removed.decontaminated``).

Every number is the manifest's, in a cell marked ``data-key`` with its path.
"""

from __future__ import annotations

import html
import io

from pipeline.dataset import charts
from pipeline.dataset.html_cells import cell, grid, table
from pipeline.quality.decision_files import DECONTAMINATED, NEAR_DUPLICATE

NEAR_OPTIONS = ("near_dup_threshold", "minhash_perm", "minhash_bands", "shingle_words")
DECONTAMINATION_OPTIONS = ("mode", "ngram", "field", "normalization")
EVAL_SET_COLUMNS = [("files", "files"), ("passages", "passages"),
                    ("short_passages", "passages too short"), ("ngrams", "distinct n-grams"),
                    ("documents", "documents holding one"),
                    ("ngrams_matched", "n-grams matched")]
SUBSET_COLUMNS = [("documents_dropped", "documents dropped"),
                  ("documents_redacted", "documents redacted"),
                  ("documents_emptied", "emptied by the cut (dropped)"), ("spans", "spans cut"),
                  ("characters_removed", "characters cut"), ("ngrams_matched", "n-grams matched")]


def generic_quality(block: dict) -> dict:
    """The ``quality`` block less what the two sections here show (for the key/value table)."""
    rest = {k: v for k, v in block.items() if k not in ("near_dup", "decontamination")}
    if isinstance(rest.get("removed"), dict):
        rest["removed"] = {reason: by_subset for reason, by_subset in rest["removed"].items()
                           if reason not in (NEAR_DUPLICATE, DECONTAMINATED)}
    return rest


def _removed(doc: dict, reason: str) -> str:
    removed = doc["quality"].get("removed", {}).get(reason, {})
    rows = [(name, cell(f"quality.removed.{reason}.{name}", n))
            for name, n in sorted(removed.items())]
    rows.append(("all subsets", cell(f"quality.removed.{reason}", sum(removed.values()))))
    return table(rows)


def input_names(doc: dict) -> tuple[str, list[str]]:
    """The inputs' common directory and each input's path below it (short names for tables:
    the common directory is shown once)."""
    paths = [entry["path"] for entry in doc.get("inputs") or []]
    if not paths:
        return "", []
    split = [path.split("/") for path in paths]
    common = 0
    while all(len(parts) > common + 1 and parts[common] == split[0][common] for parts in split):
        common += 1
    return "/".join(split[0][:common]), ["/".join(parts[common:]) for parts in split]


def _file(names: list[str], index) -> str:
    return names[index] if isinstance(index, int) and 0 <= index < len(names) else str(index)


def _examples(doc: dict, examples: list) -> str:
    head = ("<tr><th></th><th>kept: input file</th><th>line</th><th>dropped: input file</th>"
            "<th>line</th><th>Jaccard (estimated)</th></tr>")
    body = ""
    directory, names = input_names(doc)
    for i, pair in enumerate(examples):
        key = f"quality.near_dup.examples.{i}"
        (kept_file, kept_line), (dropped_file, dropped_line) = pair["kept"], pair["dropped"]
        body += (f"<tr><th>{i + 1}</th>" + cell(f"{key}.kept.file", _file(names, kept_file))
                 + cell(f"{key}.kept.line", kept_line)
                 + cell(f"{key}.dropped.file", _file(names, dropped_file))
                 + cell(f"{key}.dropped.line", dropped_line)
                 + cell(f"{key}.jaccard", pair["jaccard"], "{:.4f}") + "</tr>")
    where = (f"<p>Input files below <code>{html.escape(directory)}/</code>.</p>"
             if directory else "")
    return f"{where}<table>{head}{body}</table>"


def near_dup_body(doc: dict, *, image: str | None) -> str:
    """The near-duplicate section's HTML (``image``: the cluster-size chart's file, or None)."""
    near = doc["quality"]["near_dup"]
    options = (doc.get("config") or {}).get("quality") or {}
    rows = [(f"--{name}", cell(f"config.quality.{name}", options[name]))
            for name in NEAR_OPTIONS if name in options]
    rows += [(name.replace("_", " "), cell(f"quality.near_dup.{name}", value))
             for name, value in sorted(near.items()) if isinstance(value, (int, float, str))]
    sizes = near.get("cluster_sizes") or {}
    clusters = table([(f"{size} documents", cell(f"quality.near_dup.cluster_sizes.{size}", n))
                      for size, n in sorted(sizes.items(), key=lambda kv: int(kv[0]))])
    parts = [
        "<p>MinHash signatures of word shingles, banded (LSH); candidate pairs whose estimated "
        "Jaccard similarity reaches the threshold are verified, and chains of them merge into "
        "clusters, each keeping its lowest (input file, line). Lines count from 1.</p>",
        table(rows),
        f'<img src="{html.escape(image)}" alt="near-duplicate clusters">' if image else "",
        "<h3>Clusters by size</h3>", clusters,
        "<h3>Documents removed per subset</h3>", _removed(doc, NEAR_DUPLICATE),
    ]
    if near.get("examples"):
        parts += ["<h3>Example pairs</h3>",
                  "<p>The lowest pairs by (file, line). The manifest holds no text: each "
                  "document is that line of its input file.</p>",
                  _examples(doc, near["examples"])]
    return "".join(parts)


def decontamination_body(doc: dict) -> str:
    """The contamination section's HTML: options, per evaluation set, per subset."""
    block = doc["quality"]["decontamination"]
    options = table([(name, cell(f"quality.decontamination.{name}", block[name]))
                     for name in DECONTAMINATION_OPTIONS if name in block])
    removed = doc["quality"].get("removed", {}).get(DECONTAMINATED, {})
    subsets = {name: dict(row) for name, row in (block.get("subsets") or {}).items()}
    for name in set(removed) - set(subsets):
        subsets[name] = {}
    per_subset = grid(corner="subset", columns=SUBSET_COLUMNS, rows=subsets,
                      prefix="quality.decontamination.subsets")
    return "".join([
        "<p>Every document's word n-grams (normalized) looked up in the evaluation sets' "
        "n-grams: a document holding one is dropped, or with --decontaminate_mode=redact the "
        "overlapping words are cut (a document left blank is dropped).</p>",
        options,
        "<h3>Per evaluation set</h3>",
        grid(corner="evaluation set", columns=EVAL_SET_COLUMNS,
             rows=block.get("eval_sets") or {}, prefix="quality.decontamination.eval_sets"),
        "<h3>Per subset</h3>", per_subset,
        "<h3>Documents removed as decontaminated</h3>", _removed(doc, DECONTAMINATED),
    ])


def sections(doc: dict, *, put) -> list[tuple[str, str]]:
    """(title, HTML) of the sections the manifest has; charts drawn through ``put(name,
    png_bytes)``."""
    quality = doc.get("quality")
    if not isinstance(quality, dict):
        return []
    found = []
    if quality.get("near_dup"):
        buffer, image = io.BytesIO(), None
        if charts.cluster_sizes(quality["near_dup"], buffer) is not None:
            image = "near_dup_clusters.png"
            put(image, buffer.getvalue())
        found.append(("Near duplicates", near_dup_body(doc, image=image)))
    if quality.get("decontamination"):
        found.append(("Contamination", decontamination_body(doc)))
    return found
