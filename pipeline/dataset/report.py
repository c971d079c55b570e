"""``python -m pipeline.report --manifest M --output DIR``: a dataset report people look at.

Writes ``DIR/index.html`` and its PNG charts (matplotlib): documents, text and tokens per
``pile_set_name``, bytes per token, histograms of document length and tokens per document,
shard sizes against the target, padding, dead letters by reason (with links to their files),
the tokenizer's fingerprint and training sample, and the data-quality sections when the
manifest has them (near duplicates and contamination: ``pipeline.dataset.quality_report``).
The page is self-contained (relative links only) and every number on it is the manifest's,
marked ``data-key`` so tests compare them. The manifest may be local or ``s3://``; so may DIR.
docs/observability.md explains each chart.
"""

from __future__ import annotations

import html
import io

from common import storage
from pipeline.dataset import charts, quality_report
from pipeline.dataset.html_cells import cell as _cell
from pipeline.dataset.html_cells import table as _table
from schemas import manifest as manifest_lib


def summary_rows(doc: dict) -> list[tuple[str, str]]:
    totals, acct = doc["totals"], doc["accounting"]
    real = totals["tokens"] + totals["padding_tokens"]
    padding = totals["padding_tokens"] / real if real else 0.0
    return [
        ("split", _cell("split", doc["split"])),
        ("documents read", _cell("accounting.read", acct["read"])),
        ("documents written", _cell("accounting.written", acct["written"])),
        ("documents filtered", _cell("accounting.filtered", sum(acct["filtered"].values()))),
        ("documents rejected", _cell("accounting.rejected", sum(acct["rejected"].values()))),
        ("text bytes", _cell("totals.text_bytes", totals["text_bytes"])),
        ("tokens", _cell("totals.tokens", totals["tokens"])),
        ("records", _cell("totals.records", totals["records"])),
        ("shards", _cell("totals.shards", totals["shards"])),
        ("bytes", _cell("totals.bytes", totals["bytes"])),
        ("sequence length", _cell("seq_len", doc["seq_len"])),
        ("padding fraction", _cell("padding_fraction", padding, "{:.4%}")),
        ("tokenizer sha256", _cell("tokenizer.sha256", doc["tokenizer"]["sha256"])),
        ("vocabulary", _cell("tokenizer.vocab_size", doc["tokenizer"]["vocab_size"])),
    ]


def subset_rows(doc: dict) -> str:
    head = ("<tr><th>pile_set_name</th><th>documents</th><th>text bytes</th><th>tokens</th>"
            "<th>bytes per token</th></tr>")
    body = ""
    for name, row in sorted(doc["subsets"].items()):
        ratio = row["bytes"] / row["tokens"] if row["tokens"] else 0.0
        body += (f"<tr><th>{html.escape(name)}</th>"
                 + _cell(f"subsets.{name}.documents", row["documents"])
                 + _cell(f"subsets.{name}.bytes", row["bytes"])
                 + _cell(f"subsets.{name}.tokens", row["tokens"])
                 + _cell(f"subsets.{name}.bytes_per_token", ratio, "{:.3f}") + "</tr>")
    return f"<table>{head}{body}</table>"


def dead_letter_rows(doc: dict, *, dataset_url: str) -> str:
    rejected = doc["accounting"]["rejected"]
    reasons = "".join(f"<tr><th>{html.escape(r)}</th>{_cell(f'rejected.{r}', n)}</tr>"
                      for r, n in sorted(rejected.items())) or "<tr><td>none</td></tr>"
    files = "".join(
        f'<li><a href="{html.escape(storage.join(dataset_url, d["path"]))}">'
        f'{html.escape(d["path"])}</a> ({d["records"]:,} records)</li>'
        for d in doc["dead_letters"])
    return f"<table>{reasons}</table><ul>{files}</ul>"


def _render(doc: dict, *, put, dataset_url: str) -> str:
    """Draw every chart through ``put(name, png_bytes)``; return the page's HTML."""
    sections = [("Summary", _table(summary_rows(doc)), None),
                ("Subsets", subset_rows(doc), None)]

    def chart(title: str, name: str, draw, *args, **kwargs) -> None:
        buffer = io.BytesIO()
        caption = draw(*args, buffer, **kwargs)
        if caption is None:
            return
        put(name, buffer.getvalue())
        sections.append((title, f"<p>{html.escape(caption)}</p>", name))

    chart("Documents, text and tokens per subset", "subsets.png", charts.subsets, doc)
    chart("Bytes per token", "bytes_per_token.png", charts.bytes_per_token, doc)
    for key, title, label in (("document_bytes", "Document length", "document length (bytes)"),
                              ("document_tokens", "Tokens per document", "tokens per document")):
        hist = (doc.get("histograms") or {}).get(key)
        if hist:
            chart(title, f"{key}.png", charts.histogram, hist, xlabel=label)
    chart("Shard sizes", "shard_sizes.png", charts.shard_sizes, doc)
    chart("Dead letters", "dead_letters.png", charts.dead_letters, doc)
    sections.append(("Dead-letter files", dead_letter_rows(doc, dataset_url=dataset_url), None))
    chart("Tokenizer training sample", "tokenizer_sample.png", charts.tokenizer_sample, doc)
    for title, body in extra_sections(doc, put=put):
        sections.append((title, body, None))
    parts = []
    for title, body, image in sections:
        img = f'<img src="{image}" alt="{html.escape(title)}">' if image else ""
        parts.append(f"<section><h2>{html.escape(title)}</h2>{body}{img}</section>")
    return PAGE.format(split=html.escape(doc["split"]), body="\n".join(parts))


def extra_sections(doc: dict, *, put) -> list[tuple[str, str]]:
    """Sections for optional manifest blocks (data quality, encoder), as key/value tables;
    the near-duplicate and contamination sections after data quality (charts via ``put``)."""
    found = []
    for key, title in (("quality", "Data quality"), ("mixture", "Mixture"),
                       ("encoder", "Encoder")):
        block = doc.get(key)
        if key == "quality" and isinstance(block, dict):  # less its own sections' blocks
            block = quality_report.generic_quality(block)
        if isinstance(block, dict) and block:
            found.append((title, _nested_table(block, prefix=key)))
        if key == "quality":
            found += quality_report.sections(doc, put=put)
    return found


def _nested_table(block: dict, *, prefix: str) -> str:
    rows = []
    for name, value in sorted(block.items()):
        if isinstance(value, dict) and not value:  # e.g. a reason nothing was removed for
            rows.append((name, "<td>none</td>"))
        elif isinstance(value, dict):
            rows.append((name, f"<td>{_nested_table(value, prefix=f'{prefix}.{name}')}</td>"))
        else:
            rows.append((name, _cell(f"{prefix}.{name}", value)))
    return _table(rows)


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>pilepack dataset report: {split}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 70em; }}
table {{ border-collapse: collapse; margin: 0.5em 0; }}
th, td {{ border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }}
th {{ text-align: left; background: #f4f4f4; }}
img {{ max-width: 100%; display: block; margin: 0.5em 0; }}
</style></head>
<body><h1>Dataset report: {split}</h1>
{body}
</body></html>
"""


def write_report(*, manifest: str, output: str) -> str:
    """Render the report of ``manifest`` into ``output``; return the path of index.html."""
    dataset = manifest_lib.load(manifest, check_files=False)

    def put(name: str, data: bytes) -> None:
        with storage.atomic_open(storage.join(output, name), "wb") as handle:
            handle.write(data)

    page = _render(dataset.doc, put=put, dataset_url=_relative_or_url(output, dataset.directory))
    path = storage.join(output, "index.html")
    put("index.html", page.encode("utf-8"))
    return path


def _relative_or_url(output: str, directory: str) -> str:
    """Links to the dataset's files: relative when both are local, else the dataset's URL."""
    import os

    if "://" in output or "://" in directory:
        return directory
    return os.path.relpath(directory, output)
