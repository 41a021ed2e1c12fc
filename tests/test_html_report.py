"""The HTML report (``compile --html FILE``, a dump's ``index.html``;
mytriton/report): read back with html.parser, no browser (test_html_browser.py
renders it in one)."""
from __future__ import annotations

import os
import re

import pytest

from conftest import ROOT
from html_page import read_page
from mytriton.report import assets, locations, page
from mytriton_command import run

ADD = "samples/add.py"
MATMUL = "samples/matmul.py"
F16_MATMUL = "*fp16, *fp16, *fp32, i32, i32, i32"
STAGES = ["ast", "tree", "ssa", "opt", "staged", "layouts", "cuda", "ptx"]
SSA_STAGES = ["tree", "ssa", "opt", "staged", "layouts"]


@pytest.fixture
def no_nvcc(monkeypatch):
    """nvcc is not found and NVRTC is off: no PTX, no ptxas (and no build in the fast tests)."""
    from mytriton.backends.cuda import nvcc

    def missing() -> str:
        raise nvcc.NvccMissing("nvcc was not found on PATH")

    monkeypatch.setattr(nvcc, "find_nvcc", missing)
    monkeypatch.setenv("MYTRITON_NVRTC", "0")


def html_of(tmp_path, *args: str, name: str = "k.html") -> str:
    out = tmp_path / name
    result = run("compile", *args, "--html", str(out), text=True)
    assert result.returncode == 0, result.stderr
    return out.read_text()


# ---- what the page holds ----------------------------------------------------------------


def test_the_page_has_the_source_and_every_stage_in_pipeline_order(tmp_path, no_nvcc):
    shown = read_page(html_of(tmp_path, ADD))
    assert list(shown.columns) == ["source", *STAGES]
    source = [line.text for line in shown.columns["source"]]
    assert source == (ROOT / ADD).read_text().splitlines()
    for stage in STAGES[:-1]:
        assert shown.columns[stage], stage
    assert "hidden" in shown.column_attrs["ast"] and "hidden" not in shown.column_attrs["cuda"]
    assert [line.text for line in shown.columns["layouts"]] == run(
        "compile", ADD, "--emit=layouts", text=True).stdout.splitlines()
    assert shown.columns["ptx"] == [] and any("nvcc is not found" in note for note in shown.notes["ptx"])
    assert "add_kernel" in shown.title


def test_the_header_names_the_kernel_its_signature_and_options(tmp_path, no_nvcc):
    text = html_of(tmp_path, ADD, "-D", "BLOCK=128", "--num-warps", "2")
    assert "add_kernel(x_ptr: ptr&lt;f32&gt;, y_ptr: ptr&lt;f32&gt;, out_ptr: ptr&lt;f32&gt;, n: i32) " \
           "constexpr(BLOCK = 128)" in text
    assert "<dt>-D</dt><dd><code>BLOCK=128</code></dd>" in text
    assert "<dt>--num-warps</dt><dd><code>2</code></dd>" in text


def test_each_ir_line_links_to_the_source_lines_of_its_locations(tmp_path, no_nvcc):
    shown = read_page(html_of(tmp_path, ADD))
    for stage in SSA_STAGES:
        for line in shown.columns[stage]:
            found = [int(n) for n in re.findall(r"@(?:\"[^\"]*\":)?(\d+):\d+", line.text)]
            assert sorted(set(line.source_lines)) == sorted(set(found)), (stage, line.text)
            if found:
                assert line.source_lines[0] == found[-1]  # the outermost op's location first
    loads = [line.text.strip() for line in shown.columns["layouts"] if 11 in line.source_lines]
    assert len(loads) == 2 and loads[0].startswith("%4 = addptr x_ptr") and loads[1].startswith("%6 = load %4")


def test_cuda_lines_link_to_the_line_of_the_directive_above_them(tmp_path, no_nvcc):
    shown = read_page(html_of(tmp_path, ADD))
    current = None
    linked = 0
    for line in shown.columns["cuda"]:
        directive = re.match(r"\s*#line (\d+) ", line.text)
        if directive:
            current = int(directive.group(1))
        assert line.source_lines == ([current] if current else []), line.text
        linked += bool(line.source_lines)
    assert linked > 20
    stores = [line.text for line in shown.columns["cuda"] if line.source_lines == [13] and "//" in line.text]
    assert any("store @13" in text for text in stores)


def test_the_bundle_links_its_functions_to_their_lines_in_the_file(tmp_path, no_nvcc):
    shown = read_page(html_of(tmp_path, ADD))
    source = [line.text for line in shown.columns["source"]]
    linked = [line for line in shown.columns["ast"] if line.source_lines]
    assert len(linked) == 8  # the decorator to the store
    for line in linked:
        assert source[line.source_lines[0] - 1] == line.text


def test_the_source_shows_each_remark_under_its_line_and_the_list_links_it(tmp_path, no_nvcc):
    text = html_of(tmp_path, MATMUL, "-s", F16_MATMUL)
    shown = read_page(text)
    assert len(shown.remark_items) == 1
    assert shown.remark_items[0].startswith("samples/matmul.py:24:16: remark: dot 64x64x32 f16: staged")
    assert "ptxas not run (nvcc not found)" in shown.remark_items[0]
    assert '<a href="#L24">samples/matmul.py:24:16</a>' in text
    row = text.index('data-line="24"')
    assert text.index('<span class="remark">remark: dot 64x64x32', row) < text.index('data-line="25"')


def test_a_kernel_without_dots_says_it_has_no_remarks(tmp_path, no_nvcc):
    assert "no tl.dot in this kernel: no remarks" in html_of(tmp_path, ADD)


def test_without_mytriton_viz_the_pictures_section_says_why(tmp_path, no_nvcc, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "mytriton.viz", None)  # import mytriton.viz raises ImportError
    shown = read_page(html_of(tmp_path, ADD))
    assert shown.images == []
    assert "no layout pictures: this installation has no mytriton.viz" in html_of(tmp_path, ADD)


def test_pictures_from_mytriton_viz_are_on_the_page_and_a_failure_is_a_note(tmp_path, no_nvcc, monkeypatch):
    import sys
    import types

    viz = types.ModuleType("mytriton.viz")
    viz.layout_svgs = lambda kernel: [(f"{kernel.name} #blocked0", "<svg xmlns='http://www.w3.org/2000/svg'/>")]
    monkeypatch.setitem(sys.modules, "mytriton.viz", viz)
    shown = read_page(html_of(tmp_path, ADD))
    assert [image["alt"] for image in shown.images] == ["add_kernel #blocked0"]

    def broken(kernel):
        raise ValueError("no picture")

    viz.layout_svgs = broken
    assert "no layout pictures: mytriton.viz failed (ValueError: no picture)" in html_of(tmp_path, ADD)


def test_pictures_go_in_as_data_images(monkeypatch):
    import base64

    svg = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    report = page.Report(file="k.py", source="x\n", kernel="k", pictures=[("<b>tile</b>", svg)])
    shown = read_page(page.render(report))
    (image,) = shown.images
    assert image["alt"] == "<b>tile</b>"
    src = image["src"] or ""
    assert src.startswith("data:image/svg+xml;base64,")
    assert base64.b64decode(src.split(",", 1)[1]).decode() == svg


# ---- hostile input ----------------------------------------------------------------------

HOSTILE_KERNEL = '''\
import mytriton
import mytriton.language as tl

# </script><script>document.title = "pwned-script"</script>
# <img src=x onerror="document.title = 'pwned-img'"> &amp; <!-- -->


@mytriton.jit
def k(x_ptr, out_ptr, TAG: tl.constexpr):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs)
    if TAG == "</script><img src=x onerror=alert(2)>":
        x = x + 1.0
    tl.store(out_ptr + offs, x)
'''
HOSTILE_TAG = 'TAG="</script><img src=x onerror=alert(2)>"'
HOSTILE_NAME = "<img src=x onerror=alert(1)>.py"


def hostile_page(tmp_path) -> tuple[str, str]:
    kernel = tmp_path / HOSTILE_NAME
    kernel.write_text(HOSTILE_KERNEL)
    return html_of(tmp_path, str(kernel), "-D", HOSTILE_TAG), str(kernel)


def test_hostile_source_names_and_ir_stay_text(tmp_path, no_nvcc):
    text, kernel = hostile_page(tmp_path)
    shown = read_page(text)
    assert shown.scripts == [assets.JS]  # the page's own script, once, and no other
    assert [name for _, name, _ in shown.all_attrs if name.startswith("on")] == []
    # the only images are the page's own layout pictures, as data: SVG with escaped titles
    assert all(set(image) == {"alt", "src"} and str(image["src"]).startswith("data:image/svg+xml;base64,")
               for image in shown.images)
    assert "<img src=x" not in text and "</script><s" not in text and "</script><i" not in text and "<!--" not in text
    source = [line.text for line in shown.columns["source"]]
    assert source == HOSTILE_KERNEL.splitlines()  # what the file says, as text
    assert kernel in shown.title
    assert any('constexpr(TAG = "</script><img src=x onerror=alert(2)>")' in line.text
               for line in shown.columns["ssa"])


def test_the_page_allows_only_its_own_script(tmp_path, no_nvcc):
    text, _ = hostile_page(tmp_path)
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', text)
    assert policy is not None and "default-src 'none'" in policy.group(1)
    assert f"script-src '{assets.SCRIPT_HASH}'" in policy.group(1)
    assert "http:" not in text.replace("http://www.w3.org", "") and "https:" not in text  # no network


# ---- size -------------------------------------------------------------------------------


def test_a_huge_stage_is_cut_with_a_note():
    huge = "".join(f"%{i} = add %{i}, 1 : i32 @5:3\n" for i in range(page.MAX_STAGE_LINES * 3))
    report = page.Report(file="k.py", source="x\n", kernel="k",
                         stages=[page.StageView("ssa", "SSA", "ssa", huge)])
    text = page.render(report)
    shown = read_page(text)
    assert len(shown.columns["ssa"]) == page.MAX_STAGE_LINES
    assert any(note.startswith(f"truncated: the page shows the first {page.MAX_STAGE_LINES:,} of "
                               f"{page.MAX_STAGE_LINES * 3:,} lines") for note in shown.notes["ssa"])
    assert len(text) < 2 * page.MAX_STAGE_CHARS


def test_one_huge_line_is_cut_too():
    report = page.Report(file="k.py", source="x\n", kernel="k",
                         stages=[page.StageView("cuda", "CUDA", "cuda", "<" * (50 * page.MAX_STAGE_CHARS))])
    text = page.render(report)
    assert len(text) < 5 * page.MAX_STAGE_CHARS + 100_000
    assert "truncated:" in text


# ---- reading locations ------------------------------------------------------------------

PTX = """\
\t.loc\t1 7 0
\tmov.u32 %r1, %ctaid.x;
\t.loc\t2 151 3, function_name $L__info_string0, inlined_at 1 20 9
\tcp.async.ca.shared.global [%r2], [%rd1], 16;
\t.loc\t3 549 1, function_name $L__info_string1, inlined_at 4 30 9
\tadd.f32 %f1, %f2, %f3;
\t.loc\t1 0 5
\tret;
\t.file\t1 "/abs/dir/samples/k.py"
\t.file\t2 "/usr/local/cuda/include/sm_20_intrinsics.hpp"
\t.file\t4 "/elsewhere/other.py"
"""


def test_ptx_lines_follow_loc_in_the_kernels_file_and_inlined_at():
    assert locations.ptx_lines(PTX, "/abs/dir/samples/k.py")[:8] == [
        (7,), (7,), (20,), (20,), (), (), (), ()]
    assert locations.ptx_lines(PTX, "samples/k.py")[:2] == [(7,), (7,)]  # a relative name: its tail
    assert locations.ptx_lines(PTX, "other/k.py")[:2] == [(), ()]


def test_percent_encoded_ptx_file_names_match():
    ptx = '\t.loc\t1 3 1\n\tret;\n\t.file\t1 "/d/caf%C3%A9.py"\n'
    assert locations.ptx_lines(ptx, "/d/caf\u00e9.py")[:2] == [(3,), (3,)]


def test_cuda_without_directives_reads_the_op_comments():
    cuda = "int a;\n  const int v0 = x;  // program_id @8:11\n  // load @11, load @12 over L0\n"
    assert locations.cuda_lines(cuda) == [(), (8,), (12, 11), ()]


def test_ir_lines_skip_the_kernel_file_name_and_keep_each_line_once():
    text = 'kernel k(a: i32) @"odd @3:4 name.py":7:1 sha256="0" {\n  %0 = add(add(a, 1)@9:3, 2)@9:1\n}'
    assert locations.ir_lines(text) == [(7,), (9,), ()]


# ---- the command ------------------------------------------------------------------------


def test_html_leaves_stdout_as_the_emitted_stage(tmp_path, no_nvcc):
    for emit in ("ssa", "cuda", "ttir"):
        plain = run("compile", ADD, f"--emit={emit}", text=True)
        with_page = run("compile", ADD, f"--emit={emit}", "--html", str(tmp_path / f"{emit}.html"), text=True)
        assert with_page.returncode == 0 and with_page.stdout == plain.stdout
        shown = read_page((tmp_path / f"{emit}.html").read_text())
        assert shown.columns["cuda"], emit  # compiled through the CUDA whatever --emit is


def test_bad_input_is_a_located_error_and_writes_no_page(tmp_path, no_nvcc):
    bad = tmp_path / "bad.py"
    bad.write_text("import mytriton\n\n@mytriton.jit\ndef k(x_ptr):\n    y = undefined_name + 1\n")
    result = run("compile", str(bad), "--html", str(tmp_path / "out.html"), text=True)
    assert result.returncode == 1
    assert re.match(rf"{re.escape(str(bad))}:5:\d+: error: ", result.stderr)
    assert sorted(os.listdir(tmp_path)) == ["bad.py"]  # no page, no partial file


def test_html_names_a_file(tmp_path):
    assert run("compile", ADD, "--html", str(tmp_path)).returncode == 2
    assert run("compile", ADD, "--html", "-").returncode == 2


def test_html_through_a_link_writes_its_target_and_keeps_the_link(tmp_path, no_nvcc):
    target = tmp_path / "real.html"
    target.write_text("old")
    os.symlink(target, tmp_path / "link.html")
    assert run("compile", ADD, "--html", str(tmp_path / "link.html")).returncode == 0
    assert os.path.islink(tmp_path / "link.html") and target.read_text().startswith("<!DOCTYPE html>")


def test_a_dump_dir_gets_an_index_of_what_it_holds(tmp_path, no_nvcc):
    result = run("compile", ADD, "--emit=opt", "--dump-dir", str(tmp_path / "d"), text=True)
    assert result.returncode == 0, result.stderr
    shown = read_page((tmp_path / "d" / "index.html").read_text())
    assert [line.text for line in shown.columns["opt"]] == (tmp_path / "d" / "03-opt.ssa").read_text().splitlines()
    for stage in ("staged", "layouts", "cuda", "ptx"):
        assert shown.columns[stage] == [] and shown.notes[stage] == [
            "not dumped: the compile stopped at --emit=opt"], stage


def test_dump_dir_and_html_write_the_same_page(tmp_path, no_nvcc):
    run("compile", ADD, "--emit=cuda", "--dump-dir", str(tmp_path / "d"), "--html", str(tmp_path / "k.html"))
    assert (tmp_path / "d" / "index.html").read_text() == (tmp_path / "k.html").read_text()


def test_a_jit_dump_gets_an_index(kernel_module, tmp_path, monkeypatch):
    import numpy as np

    monkeypatch.setenv("MYTRITON_DUMP_DIR", str(tmp_path / "dumps"))
    module = kernel_module("""
        @mytriton.jit
        def add_one(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)
        """)
    x = np.zeros(16, np.float32)
    module.add_one[(1,)](x, 16, BLOCK=16, backend="interp")
    (folder,) = os.listdir(tmp_path / "dumps")
    shown = read_page((tmp_path / "dumps" / folder / "index.html").read_text())
    assert any(line.source_lines == [7] for line in shown.columns["layouts"])  # the store
    assert shown.notes["ptx"] and "interpreter" in shown.notes["ptx"][0]


@pytest.mark.nvcc
def test_the_ptx_column_links_lines_to_the_source(tmp_path, cache):
    shown = read_page(html_of(tmp_path, ADD))
    linked = {n for line in shown.columns["ptx"] for n in line.source_lines}
    assert {8, 9, 10, 11, 12, 13} <= linked <= set(range(1, 14))
