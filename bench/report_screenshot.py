"""Regenerate docs/images/report_quality.png: the dataset report's data-quality sections.

    python -m bench.report_screenshot [--output=docs/images/report_quality.png]

Builds a small split with ``--dedup=near --decontaminate=... --decontaminate_mode=redact``
from planted data (``datagen.quality_sample``), renders its report (``pipeline.report``),
keeps the page's data-quality, near-duplicate and contamination sections, and screenshots
them with headless Chromium (Debian's ``chromium``), cropped to the content.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import matplotlib.image
import numpy as np
from PIL import Image  # matplotlib's own dependency

from datagen.quality_sample import write_quality_input

SECTIONS = ("Data quality", "Near duplicates", "Contamination")
WIDTH = 1000


def _run(args: list[str], *, cwd: str) -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root}
    subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, check=True)


def quality_page(report_dir: str) -> str:
    """Write ``quality.html`` beside ``index.html`` with only the ``SECTIONS``; its path."""
    with open(os.path.join(report_dir, "index.html"), encoding="utf-8") as handle:
        page = handle.read()
    kept = [s for s in re.findall(r"<section>.*?</section>", page, flags=re.S)
            if re.match(r"<section><h2>([^<]*)</h2>", s).group(1) in SECTIONS]
    head, _, rest = page.partition("<body>")
    title = re.search(r"<h1>.*?</h1>", rest).group(0)
    path = os.path.join(report_dir, "quality.html")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"{head}<body>{title}\n" + "\n".join(kept) + "\n</body></html>\n")
    return path


def screenshot(page: str, output: str, *, height: int = 3000) -> tuple[int, int]:
    """Screenshot ``page`` in headless Chromium, crop the blank bottom; (width, height)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    raw = output + ".full.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--allow-file-access-from-files", f"--window-size={WIDTH},{height}",
                    f"--screenshot={raw}", "file://" + os.path.abspath(page)],
                   check=True, capture_output=True, timeout=120)
    pixels = matplotlib.image.imread(raw)[:, :, :3]
    os.remove(raw)
    used = np.flatnonzero((pixels < 0.98).any(axis=(1, 2)))
    bottom = min(len(pixels), int(used[-1]) + 24) if len(used) else len(pixels)
    image = Image.fromarray((pixels[:bottom] * 255).round().astype(np.uint8))
    image.quantize(colors=64).save(output, optimize=True)  # text and flat charts: 1/4 the bytes
    return pixels.shape[1], bottom


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="docs/images/report_quality.png")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        made = write_quality_input(work, seed=0)
        rel = [os.path.relpath(p, work) for p in made.eval_sets]  # short names on the page
        _run(["pipeline.run", "--input=in", "--output=out/train", "--dedup=near",
              "--decontaminate=" + ",".join(rel), "--decontaminate_mode=redact",
              "--vocab_size=400", "--seq_len=64", "--runner=DirectRunner"], cwd=work)
        _run(["pipeline.report", "--manifest=out/train", "--output=report"], cwd=work)
        page = quality_page(os.path.join(work, "report"))
        with open(page, encoding="utf-8") as handle:  # the temporary directory is no one's
            text = handle.read().replace(os.path.realpath(work), "/data/pile").replace(
                work, "/data/pile")
        with open(page, "w", encoding="utf-8") as handle:
            handle.write(text)
        size = screenshot(page, args.output)
    print(f"wrote {args.output} ({size[0]} x {size[1]} pixels)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
