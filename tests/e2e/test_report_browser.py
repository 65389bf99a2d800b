"""`judged report` as a person sees it: the HTML file on the bundled TREC DL 2020 sample is self-contained (no
network, no script), opens with at most five sentences of conclusions, holds one plot per measure and cutoff (values
with intervals, per-query differences), a pairs plot per measure and the coverage and distribution plots as SVG
with drawn paths, and renders in headless Chromium (Debian's `chromium`, installed by .ci/setup when it can be)
without errors to a PNG that is not blank; a report of TREC DL 2020's 59 runs reads at a glance.

Skips with the reason when chromium is not installed. Chromium runs in its own session and is killed with it, so
no browser outlives the test.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from judged.flows.cli.app import app
from tests.conftest import SAMPLE

QRELS = SAMPLE / "qrels.dl20-passage.txt"
RUNS = [SAMPLE / "runs" / f"input.{name}.gz" for name in ("p_bm25", "pash_r3", "DoRA_Large")]
MEASURE_PLOTS = tuple(f"measure-plot-nDCG-{k}" for k in (10, 100, 1000))  # every measure and cutoff it holds
PAIRS_PLOTS = tuple(f"pairs-plot-nDCG-{k}" for k in (10, 100, 1000))
PLOTS = (*MEASURE_PLOTS, *PAIRS_PLOTS, "coverage-plot", "distribution-plot")


@cache
def report(folder: str) -> Path:
    out = Path(folder) / "report.html"
    result = CliRunner().invoke(app, ["report", str(QRELS), *map(str, RUNS), "--preset", "trec_eval", "--cutoffs",
                                      "10,100,1000", "--permutations", "1000", "--resamples", "1000",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return report(str(tmp_path_factory.mktemp("report")))


def test_report_is_self_contained_with_every_plot_drawn(report_file: Path) -> None:
    text = report_file.read_text()
    assert "<script" not in text and "<link" not in text and "<img" not in text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text)  # nothing fetched
    for plot in PLOTS:
        block = re.split(f"id='{plot}'[^>]*>", text, maxsplit=1)[1].split("</div>", 1)[0]
        assert block.startswith("<svg") and block.count("<path") >= 10, plot
    for heading in ("Summary", "Pairs", "Provenance", "Unjudged coverage by cutoff"):
        assert heading in text
    assert "trec-dl-2020-passage version nist-final" in text and "pash_r3" in text
    assert text.count("class='plot measure-plot'") == len(MEASURE_PLOTS)  # no plot of a measure the report lacks


def conclusions(page: str) -> list[str]:
    """The report's opening sentences (from its HTML, or from chromium's DOM)."""
    block = re.search(r"""<ul id=["']conclusions["'][^>]*>(.*?)</ul>""", page, re.S)
    assert block, "the report has no conclusions"
    return [re.sub(r"<[^>]+>", "", item).strip() for item in re.findall(r"<li>(.*?)</li>", block.group(1), re.S)]


def expected_conclusions(text: str) -> None:
    sentences = conclusions(text)
    assert 3 <= len(sentences) <= 5, sentences
    assert sentences == [
        "Highest scoring run: pash_r3 on nDCG@10 (0.8031), nDCG@100 (0.6719) and nDCG@1000 (0.7034).",
        "The unjudged documents cannot change which run is best on nDCG@10 but could change it on nDCG@100 and "
        "nDCG@1000.",
        "Of the 3 pairs compared on nDCG@10, 2 are decided whatever the unjudged documents are and 3 significant "
        "after holm correction; the pair table below lists every pair and measure.",
        # Of nDCG@10's documents only: the 5 unjudged documents in the two runs' top 10s (not those of 100 or 1000).
        "pash_r3 &gt; p_bm25 on nDCG@10 whatever the 5 unjudged documents it reads are; significant (p holm "
        "0.0090).",
    ], sentences


def test_report_opens_with_its_conclusions(report_file: Path) -> None:
    expected_conclusions(report_file.read_text())


def _chromium_or_skip() -> str:
    browser = shutil.which("chromium")
    if browser is None:
        pytest.skip("chromium is not installed (.ci/setup installs Debian's chromium when run as root with apt)")
    return browser


def _chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Headless chromium in its own session, whose every process is killed afterwards whatever happened."""
    browser = _chromium_or_skip()
    process = subprocess.Popen(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         f"--user-data-dir={cwd / 'profile'}", "--enable-logging=stderr", "--v=0", *args],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=120)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def test_chromium_renders_the_report_without_errors(report_file: Path, tmp_path: Path) -> None:
    url = report_file.resolve().as_uri()
    dom = _chromium("--dump-dom", url, cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for plot in PLOTS:
        assert f'id="{plot}"' in dom.stdout
    assert dom.stdout.count("<svg") >= len(PLOTS) and "<path" in dom.stdout
    expected_conclusions(dom.stdout)
    page_errors = [line for line in dom.stderr.splitlines()
                   if "CONSOLE" in line or "Failed to load" in line or "ERR_" in line and "report.html" in line]
    assert page_errors == []

    png = tmp_path / "report.png"
    shot = _chromium(f"--screenshot={png}", "--window-size=1200,2600", url, cwd=tmp_path)
    assert shot.returncode == 0 and png.is_file(), shot.stderr[-2000:]
    from matplotlib.image import imread

    pixels = imread(png)[..., :3]
    assert pixels.shape[:2] == (2600, 1200)
    not_white = (pixels < 0.95).any(axis=2)
    assert not_white.mean() > 0.05  # tables, axes, bars: far from a blank page
    red, green, blue = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    assert np.count_nonzero((green > red + 0.1) & (green > blue)) > 1000  # the difference plot's green bars
    if os.environ.get("JUDGED_REPORT_SCREENSHOT"):  # refreshes the screenshot in docs/comparing.md (docs/report.png)
        shutil.copy(png, os.environ["JUDGED_REPORT_SCREENSHOT"])


@pytest.mark.slow  # 59 runs evaluated and compared (about 20 s), then rendered in chromium
def test_a_59_run_report_reads_at_a_glance(shared: Path, tmp_path: Path) -> None:
    """TREC DL 2020's 59 official runs: at most five short sentences, the title a count of runs, every one of the
    baseline's 58 pairs in the pair table and its plot, and a page chromium renders (screenshots in tmp_path)."""
    _chromium_or_skip()
    data = shared / "data" / "trec-dl-2020-passage"
    runs = sorted((data / "official-top100").glob("input.*.gz"))
    assert len(runs) == 59
    out = tmp_path / "report-59.html"
    result = CliRunner().invoke(app, ["report", str(data / "qrels.dl20-passage.txt"), *map(str, runs), "--preset",
                                      "trec_eval", "--cutoffs", "10", "--permutations", "200", "--resamples", "200",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    sentences = conclusions(text)
    assert 3 <= len(sentences) <= 5 and all(len(sentence.split()) <= 40 for sentence in sentences), sentences
    assert sentences[2].startswith("Of the 58 pairs compared on nDCG@10, ")
    assert "<h1>judged report: 59 runs (1, 2, CoRT-bm25, ...)</h1>" in text
    assert "The baseline against each other run, 58 of the 1,711 pairs (the default beyond 12 runs" in text
    table = re.search(r"id='pair-table'>(.*?)</table>", text, re.S)
    assert table and table.group(1).count("<tr>") == 1 + 58
    plot = re.split("id='pairs-plot-nDCG-10'[^>]*>", text, maxsplit=1)[1].split("</div>", 1)[0]
    assert plot.startswith("<svg")
    dom = _chromium("--dump-dom", out.resolve().as_uri(), cwd=tmp_path)
    assert dom.returncode == 0 and 'id="pair-table"' in dom.stdout, dom.stderr[-2000:]
    png = tmp_path / "report-59.png"
    shot = _chromium(f"--screenshot={png}", "--window-size=1200,4000", out.resolve().as_uri(), cwd=tmp_path)
    assert shot.returncode == 0 and png.is_file(), shot.stderr[-2000:]
    from matplotlib.image import imread

    pixels = imread(png)[..., :3]
    # Nothing wider than the window: the page's right margin stays white (tables scroll inside their box).
    assert (pixels[:, -40:] > 0.95).all()
