"""The report pages' table cells: each number carries its manifest key (``data-key``), so tests
compare the page with the manifest."""

from __future__ import annotations

import html


def cell(key: str, value, fmt: str = "{:,}") -> str:
    """One ``<td>`` holding ``value`` (formatted with ``fmt`` when a number), keyed ``key``."""
    text = fmt.format(value) if isinstance(value, (int, float)) else str(value)
    return f'<td data-key="{html.escape(key)}">{html.escape(text)}</td>'


def table(rows: list[tuple[str, str]]) -> str:
    """A two-column table: a heading per row, then its cells' HTML."""
    return "<table>" + "".join(f"<tr><th>{html.escape(k)}</th>{v}</tr>" for k, v in rows) + \
        "</table>"


def grid(*, corner: str, columns: list[tuple[str, str]], rows: dict, prefix: str) -> str:
    """A table of ``rows`` (name -> dict) with one column per ``(field, heading)``; the cell of
    row ``name`` and field ``f`` is keyed ``{prefix}.{name}.{f}``."""
    head = f"<tr><th>{html.escape(corner)}</th>" + "".join(
        f"<th>{html.escape(title)}</th>" for _, title in columns) + "</tr>"
    body = "".join(
        f"<tr><th>{html.escape(name)}</th>" + "".join(
            cell(f"{prefix}.{name}.{field}", row.get(field, 0)) for field, _ in columns)
        + "</tr>" for name, row in sorted(rows.items()))
    return f"<table>{head}{body}</table>"
