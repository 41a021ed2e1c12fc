"""The HTML report in a real browser: headless Chromium renders the page
(its script runs under the page's Content Security Policy), ``--dump-dom``
gives the document after the script ran (``#L24`` selects line 24, as a
click on it does) and ``--screenshot`` a picture the tests read back."""
from __future__ import annotations

import os
import subprocess

import pytest

from conftest import find_chromium
from html_page import read_page
from mytriton.report import assets
from mytriton_command import run

pytestmark = pytest.mark.browser

MATMUL = ["samples/matmul.py", "-s", "*fp16, *fp16, *fp32, i32, i32, i32"]
WINDOW = (1600, 1000)
LINKED_STAGES = ["tree", "ssa", "opt", "staged", "layouts", "cuda"]


@pytest.fixture(scope="module")
def matmul_page(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("page") / "matmul.html"
    result = run("compile", *MATMUL, "--html", str(out), text=True)
    assert result.returncode == 0, result.stderr
    return str(out)


def chromium(tmp_path, *args: str, url: str) -> subprocess.CompletedProcess:
    binary = find_chromium()
    assert binary is not None
    flags = ["--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run", "--disable-extensions",
             "--disable-background-networking", f"--user-data-dir={tmp_path / 'profile'}",
             f"--window-size={WINDOW[0]},{WINDOW[1]}"]
    if os.geteuid() == 0:
        flags.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    result = subprocess.run([binary, *flags, *args, url], capture_output=True, timeout=90, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def url_of(path: str, fragment: str = "") -> str:
    return "file://" + os.path.abspath(path) + fragment


def dom(tmp_path, path: str, fragment: str = ""):
    return read_page(chromium(tmp_path, "--dump-dom", url=url_of(path, fragment)).stdout)


def screenshot(tmp_path, path: str, fragment: str = ""):
    from matplotlib.image import imread

    png = tmp_path / "shot.png"
    chromium(tmp_path, f"--screenshot={png}", url=url_of(path, fragment))
    return imread(str(png))  # height x width x channels, floats in [0, 1]


def test_a_selected_python_line_highlights_its_lines_in_every_stage(tmp_path, matmul_page):
    shown = dom(tmp_path, matmul_page, "#L24")
    assert shown.body_attrs.get("data-ready") == "1"  # the script ran, under the page's policy
    assert shown.body_attrs.get("data-selected") == "24"
    (source,) = [line for line in shown.columns["source"] if "hl" in line.classes]
    assert source.attrs["data-line"] == "24" and source.text == "        acc += tl.dot(a, b)"
    for stage in LINKED_STAGES + (["ptx"] if shown.columns["ptx"] else []):  # PTX where nvcc is
        lit = [line for line in shown.columns[stage] if "hl" in line.classes]
        linked = [line for line in shown.columns[stage] if 24 in line.source_lines]
        assert lit and lit == linked, stage  # exactly the lines of line 24
        assert shown.column_attrs[stage].get("data-hits") == str(len(lit))
    assert any("dot" in line.text for line in shown.columns["layouts"] if "hl" in line.classes)


def test_the_screenshot_shows_the_page_and_the_highlight(tmp_path, matmul_page):
    import numpy as np

    plain = screenshot(tmp_path, matmul_page)
    selected = screenshot(tmp_path, matmul_page, "#L24")
    assert plain.shape[:2] == selected.shape[:2] == (WINDOW[1], WINDOW[0])
    for image in (plain, selected):
        rgb = image[..., :3]
        assert rgb.std() > 0.05  # not blank
        assert (rgb.mean(axis=2) < 0.3).mean() > 0.01  # text: some dark pixels

    def highlighted(image) -> int:
        want = np.array(assets.HIGHLIGHT_RGB) / 255.0
        return int((np.abs(image[..., :3] - want) < 0.02).all(axis=2).sum())

    assert highlighted(plain) == 0
    # Line 24 in the source and its ops in six or seven visible columns: full-width bands of the highlight.
    assert highlighted(selected) > 20_000


def test_hostile_input_runs_nothing_in_the_browser(tmp_path):
    from test_html_report import HOSTILE_KERNEL, HOSTILE_NAME, HOSTILE_TAG

    kernel = tmp_path / HOSTILE_NAME
    kernel.write_text(HOSTILE_KERNEL)
    out = tmp_path / "hostile.html"
    result = run("compile", str(kernel), "-D", HOSTILE_TAG, "--html", str(out), text=True)
    assert result.returncode == 0, result.stderr
    shown = dom(tmp_path, str(out), "#L13")
    assert "pwned" not in shown.title and shown.title.startswith("mytriton: k (")
    # the only images are the page's own layout pictures (data: SVG), none the kernel's text made
    assert all(set(image) == {"alt", "src"} and str(image["src"]).startswith("data:image/svg+xml;base64,")
               for image in shown.images)
    assert shown.body_attrs.get("data-ready") == "1" and shown.body_attrs.get("data-selected") == "13"
