"""report.py: the page and every chart exist, every PNG decodes, the numbers on the page are the
manifest's, it works from s3://, and headless Chromium renders it with no broken image."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess

import matplotlib.image
import pytest

from pipeline import report as report_command
from pipeline.dataset import report
from schemas import manifest as manifest_lib


@pytest.fixture(scope="module")
def rendered(tiny_dataset, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    assert report_command.main(["--manifest", str(tiny_dataset), "--output", str(out)]) == 0
    return out


def _cells(page: str) -> dict[str, str]:
    return {html.unescape(k): html.unescape(v)
            for k, v in re.findall(r'<td data-key="([^"]+)">([^<]*)</td>', page)}


def test_page_and_every_image_exist_and_decode(rendered):
    page = (rendered / "index.html").read_text()
    images = re.findall(r'<img src="([^"]+)"', page)
    assert {"subsets.png", "bytes_per_token.png", "document_bytes.png", "document_tokens.png",
            "shard_sizes.png", "dead_letters.png"} <= set(images)
    for name in images:
        pixels = matplotlib.image.imread(rendered / name)
        assert pixels.shape[0] > 100 and pixels.shape[1] > 100 and pixels.std() > 0
    assert sorted(p.name for p in rendered.glob("*.png")) == sorted(images)


def test_numbers_on_the_page_are_the_manifests(rendered, tiny_dataset):
    doc = manifest_lib.load(str(tiny_dataset)).doc
    cells = _cells((rendered / "index.html").read_text())
    acct, totals = doc["accounting"], doc["totals"]
    assert cells["accounting.read"] == f"{acct['read']:,}"
    assert cells["accounting.rejected"] == f"{sum(acct['rejected'].values()):,}"
    for key in ("tokens", "records", "shards", "bytes", "text_bytes"):
        assert cells[f"totals.{key}"] == f"{totals[key]:,}"
    assert cells["tokenizer.sha256"] == doc["tokenizer"]["sha256"]
    for name, row in doc["subsets"].items():
        assert cells[f"subsets.{name}.documents"] == f"{row['documents']:,}"
        assert cells[f"subsets.{name}.tokens"] == f"{row['tokens']:,}"
        assert cells[f"subsets.{name}.bytes_per_token"] == f"{row['bytes'] / row['tokens']:.3f}"
    for reason, count in acct["rejected"].items():
        assert cells[f"rejected.{reason}"] == f"{count:,}"
    hist = doc["histograms"]["document_tokens"]
    assert sum(hist["counts"]) == totals["documents"]  # every written document is in a bin


def test_dead_letter_links_point_at_the_files(rendered, tiny_dataset):
    page = (rendered / "index.html").read_text()
    links = re.findall(r'<a href="([^"]+)">', page)
    assert links and all((rendered / link).resolve().exists() for link in links)


def test_a_manifest_on_s3(s3, tiny_dataset, tmp_path):
    for path in tiny_dataset.rglob("*"):
        if path.is_file():
            s3.put(f"ds/{path.relative_to(tiny_dataset)}", path.read_bytes())
    out = tmp_path / "from-s3"
    report.write_report(manifest=s3.url("ds"), output=str(out))
    cells = _cells((out / "index.html").read_text())
    assert cells["totals.records"] == f"{json.loads((tiny_dataset / 'manifest.json').read_text())['totals']['records']:,}"  # noqa: E501


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs Debian's chromium (.ci/run); it is missing")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    return found


def _render_in_chromium(page) -> dict:
    """Load ``page`` in an iframe of a wrapper page, headless, and report its images."""
    wrapper = page.parent / f"wrap-{page.stem}.html"
    wrapper.write_text(f"""<!doctype html><html><body>
<iframe id="f" src="{page.as_uri()}" width="1200" height="4000"></iframe>
<script>
window.addEventListener("load", () => {{
  const d = document.getElementById("f").contentDocument;
  const imgs = d ? [...d.images] : [];
  const broken = imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute("src"));
  document.body.setAttribute("data-result", JSON.stringify({{loaded: !!d, images: imgs.length, broken}}));
}});
</script></body></html>""")  # noqa: E501
    done = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
         "--allow-file-access-from-files", "--virtual-time-budget=10000",
         "--enable-logging=stderr", "--v=0", "--dump-dom", wrapper.as_uri()],
        capture_output=True, text=True, timeout=120)
    found = re.search(r'data-result="([^"]*)"', done.stdout)
    assert found, done.stderr[-2000:]
    result = json.loads(html.unescape(found.group(1)))
    result["console_errors"] = [line for line in done.stderr.splitlines()
                                if "CONSOLE" in line and "Uncaught" in line]
    return result


def test_chromium_renders_it_with_no_broken_image(rendered, tmp_path):
    page = rendered / "index.html"
    result = _render_in_chromium(page)
    assert result["loaded"] and result["images"] == len(list(rendered.glob("*.png")))
    assert result["broken"] == [] and result["console_errors"] == []
    # The check can fail: the same page with one image missing is caught.
    broken = tmp_path / "broken"
    shutil.copytree(rendered, broken)
    (broken / "subsets.png").unlink()
    assert _render_in_chromium(broken / "index.html")["broken"] == ["subsets.png"]
