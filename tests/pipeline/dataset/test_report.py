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
from pipeline.dataset import quality_report, report
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


@pytest.fixture(scope="module")
def quality_dataset(tiny_model, tmp_path_factory):
    """A split made with --dedup=near and --decontaminate from planted data, and its report."""
    from datagen.quality_sample import write_quality_input
    from pipeline import run
    from tests.pipeline.conftest import TINY_ARGS

    root = tmp_path_factory.mktemp("quality")
    made = write_quality_input(root / "data", seed=0)
    out = root / "train"
    assert run.main(["--input", made.input, "--output", str(out), "--tokenizer_model",
                     str(tiny_model), *TINY_ARGS, "--dedup=near",
                     "--decontaminate=" + ",".join(made.eval_sets)]) == 0
    assert report_command.main(["--manifest", str(out), "--output", str(root / "report")]) == 0
    return manifest_lib.load(str(out)).doc, root / "report"


def test_near_duplicate_and_contamination_numbers_are_the_manifests(quality_dataset):
    doc, rendered = quality_dataset
    page = (rendered / "index.html").read_text()
    cells = _cells(page)
    quality, options = doc["quality"], doc["config"]["quality"]
    near, removed = quality["near_dup"], quality["removed"]
    assert "<h2>Near duplicates</h2>" in page and "<h2>Contamination</h2>" in page
    assert "near_dup_clusters.png" in re.findall(r'<img src="([^"]+)"', page)
    assert cells["config.quality.near_dup_threshold"] == f"{options['near_dup_threshold']:,}"
    assert cells["config.quality.minhash_bands"] == f"{options['minhash_bands']:,}"
    for key in ("candidate_pairs", "verified_pairs"):
        assert cells[f"quality.near_dup.{key}"] == f"{near[key]:,}"
    assert len(near["cluster_sizes"]) >= 2  # pairs and a planted cluster of three
    for size, count in near["cluster_sizes"].items():
        assert cells[f"quality.near_dup.cluster_sizes.{size}"] == f"{count:,}"
    dropped = sum((int(size) - 1) * n for size, n in near["cluster_sizes"].items())
    assert cells["quality.removed.near_duplicate"] == f"{dropped:,}"
    for reason in ("near_duplicate", "decontaminated"):
        assert removed[reason]
        for subset, count in removed[reason].items():
            assert cells[f"quality.removed.{reason}.{subset}"] == f"{count:,}"
    assert near["examples"]
    directory, names = quality_report.input_names(doc)
    assert f"Input files below <code>{directory}/</code>" in page
    for i, pair in enumerate(near["examples"]):
        for end in ("kept", "dropped"):
            file, line = pair[end]
            assert cells[f"quality.near_dup.examples.{i}.{end}.file"] == names[file]
            assert f"{directory}/{names[file]}" == doc["inputs"][file]["path"]
            assert cells[f"quality.near_dup.examples.{i}.{end}.line"] == f"{line:,}"
        assert cells[f"quality.near_dup.examples.{i}.jaccard"] == f"{pair['jaccard']:.4f}"
    block = quality["decontamination"]
    assert cells["quality.decontamination.mode"] == block["mode"]
    assert cells["quality.decontamination.ngram"] == f"{block['ngram']:,}"
    assert len(block["eval_sets"]) == 2
    for name, row in block["eval_sets"].items():
        for field, value in row.items():
            assert cells[f"quality.decontamination.eval_sets.{name}.{field}"] == f"{value:,}"
    for name, row in block["subsets"].items():
        for field, value in row.items():
            assert cells[f"quality.decontamination.subsets.{name}.{field}"] == f"{value:,}"
    # Each number once: the data-quality table leaves these to their own sections.
    keys = re.findall(r'data-key="([^"]+)"', page)
    assert len(keys) == len(set(keys))


def test_quality_sections_appear_only_when_the_manifest_has_them(rendered):
    page = (rendered / "index.html").read_text()
    assert "Near duplicates" not in page and "Contamination" not in page
    assert not (rendered / "near_dup_clusters.png").exists()
    assert not any(key.startswith(("quality.near_dup", "quality.decontamination"))
                   for key in _cells(page))


def test_chromium_renders_the_quality_sections(quality_dataset):
    _, rendered = quality_dataset
    result = _render_in_chromium(rendered / "index.html")
    assert result["loaded"] and result["images"] == len(list(rendered.glob("*.png")))
    assert result["broken"] == [] and result["console_errors"] == []
