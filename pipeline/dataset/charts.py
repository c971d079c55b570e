"""The dataset report's charts: matplotlib figures drawn from a manifest, saved as PNG.

Each function takes the manifest (a dict) and a path, draws one chart, and returns a caption
(what the chart shows, in words). Nothing here reads files: the caller loads the manifest.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # files only: no display, no GUI toolkit

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

_WIDTH = 9.0


def _barh(ax, labels, values, *, xlabel: str, fmt: str = "{:,.0f}") -> None:
    positions = range(len(labels))
    ax.barh(list(positions), values, color="#4477aa")
    ax.set_yticks(list(positions), labels)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    for y, value in zip(positions, values):
        ax.annotate(fmt.format(value), (value, y), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=8)
    ax.margins(x=0.15)


def _save(fig, path: str) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=96, format="png")
    plt.close(fig)


def subsets(doc: dict, path: str) -> str:
    """Documents, text bytes and tokens per pile_set_name (three bar charts)."""
    names = sorted(doc["subsets"])
    rows = [doc["subsets"][n] for n in names]
    fig, axes = plt.subplots(1, 3, figsize=(_WIDTH * 1.4, 0.45 * len(names) + 1.5), sharey=True)
    _barh(axes[0], names, [r["documents"] for r in rows], xlabel="documents")
    _barh(axes[1], names, [r["bytes"] / 1e6 for r in rows], xlabel="text (MB)", fmt="{:,.2f}")
    _barh(axes[2], names, [r["tokens"] / 1e6 for r in rows], xlabel="tokens (millions)",
          fmt="{:,.2f}")
    _save(fig, path)
    return "Documents, UTF-8 text and tokens written, per pile_set_name."


def bytes_per_token(doc: dict, path: str) -> str:
    """How well the tokenizer compresses each kind of text."""
    names = sorted(n for n, r in doc["subsets"].items() if r["tokens"])
    values = [doc["subsets"][n]["bytes"] / doc["subsets"][n]["tokens"] for n in names]
    fig, ax = plt.subplots(figsize=(_WIDTH, 0.45 * len(names) + 1.2))
    _barh(ax, names, values, xlabel="UTF-8 bytes per token", fmt="{:.2f}")
    _save(fig, path)
    return ("UTF-8 bytes of text per token, per subset: higher means the tokenizer compresses "
            "that kind of text better.")


def histogram(hist: dict, path: str, *, xlabel: str) -> str:
    """A log-spaced histogram stored in the manifest (edges and counts)."""
    edges, counts = hist["edges"], hist["counts"]
    fig, ax = plt.subplots(figsize=(_WIDTH, 3.2))
    ax.stairs(counts, edges, fill=True, color="#4477aa")
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("documents")
    _save(fig, path)
    return f"Documents by {xlabel}, in log-spaced bins (each bin's edges are a factor √2 apart)."


def shard_sizes(doc: dict, path: str) -> str:
    """Every shard's size against --shard_bytes."""
    target = doc["config"]["shard_bytes"]
    sizes = [s["bytes"] for s in doc["shards"]]
    fig, ax = plt.subplots(figsize=(_WIDTH, 3.2))
    ax.bar(range(len(sizes)), [s / 1e6 for s in sizes], color="#4477aa", width=0.9)
    ax.set_xlim(-0.5, max(len(sizes), 1) - 0.5)
    ax.axhline(target / 1e6, color="#cc3311", linestyle="--", label="--shard_bytes")
    ax.set_xlabel("shard")
    ax.set_ylabel("MB")
    ax.legend(loc="lower right")
    _save(fig, path)
    return ("Each shard's size against the target --shard_bytes (dashed); every shard but the "
            "split's last holds the same number of records.")


def dead_letters(doc: dict, path: str) -> str | None:
    """Rejected documents by reason."""
    rejected = doc["accounting"]["rejected"]
    if not rejected:
        return None
    names = sorted(rejected)
    fig, ax = plt.subplots(figsize=(_WIDTH, 0.45 * len(names) + 1.2))
    _barh(ax, names, [rejected.get(n, 0) for n in names], xlabel="documents rejected")
    _save(fig, path)
    return "Documents rejected (written to the dead letters), by reason."


def tokenizer_sample(doc: dict, path: str) -> str | None:
    """The tokenizer's training sample per subset (a trained tokenizer only)."""
    trained = doc["tokenizer"].get("trained") or {}
    sample = trained.get("sample_bytes_by_subset")
    if not sample:
        return None
    names = sorted(sample)
    fig, ax = plt.subplots(figsize=(_WIDTH, 0.45 * len(names) + 1.2))
    _barh(ax, names, [sample[n] / 1e6 for n in names], xlabel="sample text (MB)", fmt="{:,.2f}")
    _save(fig, path)
    return ("Text drawn per subset to train the tokenizer (equal shares, small subsets give all "
            "their text).")


def cluster_sizes(near: dict, path) -> str | None:
    """Near-duplicate clusters by size (``quality.near_dup.cluster_sizes``)."""
    sizes = near.get("cluster_sizes") or {}
    if not sizes:
        return None
    pairs = sorted((int(size), n) for size, n in sizes.items())
    fig, ax = plt.subplots(figsize=(_WIDTH, 3.2))
    labels = [str(size) for size, _ in pairs]
    ax.bar(labels, [n for _, n in pairs], color="#4477aa")
    for x, (_, n) in enumerate(pairs):
        ax.annotate(f"{n:,}", (x, n), xytext=(0, 3), textcoords="offset points", ha="center",
                    fontsize=8)
    ax.set_xlabel("documents in the cluster (one kept, the others dropped)")
    ax.set_ylabel("clusters")
    if max(n for _, n in pairs) > 50 * min(n for _, n in pairs):
        ax.set_yscale("log")  # a long tail of large clusters stays visible
    ax.margins(y=0.15)
    _save(fig, path)
    return "Near-duplicate clusters by size: a cluster of n documents keeps one, drops n - 1."
