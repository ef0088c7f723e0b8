"""``pipeline report``'s renderer (notebooks/render.py): the output format, where a report may be written, what
a written report looks like, and the refusals that come before any kernel starts."""

import json
import os

import pytest

from shgcn.core.errors import UserError
from shgcn.notebooks import render

pytest.importorskip("nbclient")
pytest.importorskip("matplotlib")


@pytest.mark.parametrize("out, fmt, want", [("r.html", None, "html"), ("R.HTML", None, "html"), ("r.ipynb", None, "ipynb"),
                                            ("r.html", "ipynb", "ipynb"), ("r.txt", "html", "html")])
def test_format_follows_the_extension(out, fmt, want):
    assert render.output_format(out, fmt) == want


@pytest.mark.parametrize("out", ["report.pdf", "report"])
def test_unknown_extension_is_one_line(out):
    with pytest.raises(UserError) as e:
        render.output_format(out)
    assert "\n" not in str(e.value) and str(e.value).startswith(f"{out}: unknown report format")


@pytest.mark.mpi  # the report's stores come with a real run (mpirun)
@pytest.mark.slow
def test_render_writes_the_format_its_extension_names_without_kernel_warnings(rendered):
    """The session's two renders of the full store (conftest.py; test_report.py reads them further)."""
    nb, res = rendered("ipynb")
    assert res.returncode == 0 and json.loads(nb.read_text())["cells"], res.stderr  # a notebook, not HTML
    assert render.is_report(nb)  # its metadata carries the mark --overwrite looks for
    page, res = rendered("html")
    assert res.returncode == 0 and page.read_text().lstrip().startswith("<!DOCTYPE html>")
    assert render.is_report(page)
    for _, res in (rendered("ipynb"), rendered("html")):
        assert "IPKernelApp" not in res.stderr and "WARNING" not in res.stderr, res.stderr


def test_a_format_given_must_be_html_or_ipynb():
    with pytest.raises(UserError) as e:
        render.output_format("r.html", "pdf")
    assert str(e.value) == "--format 'pdf': choose html or ipynb"
    with pytest.raises(UserError) as e:
        render.output_format("report")
    assert str(e.value) == ("report: unknown report format '(no extension)': name the output .html or .ipynb (or pass "
                            "--format html|ipynb)")


def test_is_report_looks_for_the_mark_in_the_first_mebibyte(tmp_path):
    mine = tmp_path / "r.html"
    mine.write_text(f'<html><head><meta name="generator" content="{render.MARK}"></head></html>')
    late = tmp_path / "late.html"
    late.write_text("x" * (1 << 20) + render.MARK)
    other = tmp_path / "o.html"
    other.write_text("<html>someone's page</html>")
    assert render.is_report(mine) and not render.is_report(late) and not render.is_report(other)
    assert not render.is_report(tmp_path / "missing.html") and not render.is_report(tmp_path)


def test_check_out(tmp_path):
    out = tmp_path / "r.html"
    render.check_out(out, overwrite=False)  # a new file in an existing directory
    with pytest.raises(UserError, match=r"nope: directory does not exist$"):
        render.check_out(tmp_path / "nope" / "r.html", overwrite=True)
    (tmp_path / "d.html").mkdir()
    with pytest.raises(UserError, match=r"d.html: is a directory; name the report file, e.g. report.html$"):
        render.check_out(tmp_path / "d.html", overwrite=True)
    out.write_text("<html>notes</html>")
    with pytest.raises(UserError, match=r"r.html: already exists \(pass --overwrite to replace a report\)$"):
        render.check_out(out, overwrite=False)
    with pytest.raises(UserError, match=r"r.html: not a report this command wrote; --overwrite replaces only those"):
        render.check_out(out, overwrite=True)
    out.write_text(f"<html>{render.MARK}</html>")
    render.check_out(out, overwrite=True)  # a report this command wrote: replaced
    link = tmp_path / "l.html"
    link.symlink_to(out)
    with pytest.raises(UserError, match="not a report this command wrote"):
        render.check_out(link, overwrite=True)  # never through a link, even to a report
    assert out.read_text() == f"<html>{render.MARK}</html>"


def notebook():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A title"),
                nbformat.v4.new_code_cell("print('hidden code')", outputs=[
                    nbformat.v4.new_output("stream", name="stdout", text="the output\n")])]
    return nb


def test_write_an_executed_notebook(tmp_path):
    out = tmp_path / "r.ipynb"
    render._write(notebook(), out, "ipynb")
    nb = json.loads(out.read_text())
    assert nb["metadata"]["generator"] == render.MARK and [c["cell_type"] for c in nb["cells"]] == ["markdown", "code"]
    assert render.is_report(out) and [p.name for p in tmp_path.iterdir()] == ["r.ipynb"]


def test_write_html_without_code_or_remote_scripts(tmp_path, monkeypatch):
    from nbconvert import HTMLExporter

    real = HTMLExporter.from_notebook_node

    def with_cdn(self, nb, **kw):
        text, res = real(self, nb, **kw)
        return text.replace("</head>", '<script src="https://cdn.example.org/require.js"></script>\n</head>'), res

    monkeypatch.setattr(HTMLExporter, "from_notebook_node", with_cdn)
    out = tmp_path / "r.html"
    render._write(notebook(), out, "html")
    html = out.read_text()
    assert f'<head>\n<meta name="generator" content="{render.MARK}">' in html
    assert "the output" in html and "A title" in html and "hidden code" not in html
    assert "cdn.example.org" not in html and "In&nbsp;[" not in html
    assert render.is_report(out) and [p.name for p in tmp_path.iterdir()] == ["r.html"]


def test_the_kernel_talks_over_unix_sockets(tmp_path):
    c = render._kernel_config(str(tmp_path))
    if os.name == "posix":
        assert c.KernelManager.transport == "ipc" and c.KernelManager.ip == str(tmp_path / "kernel")
    assert render.KERNEL_ARGS == ["--IPKernelApp.log_level=CRITICAL"]


def test_refusals_come_before_the_notebook_runs(built, tmp_path, monkeypatch):
    import papermill

    def never(*a, **kw):
        raise AssertionError("the notebook ran")

    monkeypatch.setattr(papermill, "execute_notebook", never)
    with pytest.raises(UserError, match="store not found"):
        render.render(str(tmp_path / "none.zarr"), [], str(tmp_path / "r.html"))
    with pytest.raises(UserError, match="run log not found"):
        render.render(str(built.path), [str(tmp_path / "none.jsonl")], str(tmp_path / "r.html"))
    with pytest.raises(UserError, match="unknown report format '.pdf'"):
        render.render(str(built.path), [], str(tmp_path / "r.pdf"))
    (tmp_path / "r.html").write_text("mine")
    with pytest.raises(UserError, match="already exists"):
        render.render(str(built.path), [], str(tmp_path / "r.html"))
    assert (tmp_path / "r.html").read_text() == "mine" and not (tmp_path / "r.pdf").exists()


def test_a_failing_cell_is_a_report_cell_error(built, tmp_path, monkeypatch):
    import papermill
    from papermill.exceptions import PapermillExecutionError

    seen = {}

    def fail(source, out, parameters, **kw):
        seen.update(parameters)
        raise PapermillExecutionError(3, 4, "x = f()", "ValueError", "bad rows", ["a", "b", "c", "  line\n"])

    monkeypatch.setattr(papermill, "execute_notebook", fail)
    with pytest.raises(render.ReportCellError) as e:
        render.render(str(built.path), [], str(tmp_path / "r.html"))
    assert str(e.value) == "ValueError: bad rows\nbc  line\n"
    assert seen == {"store_path": str(built.path.resolve()), "run_logs": []}
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fmt", ["ipynb", "html"])
def test_a_full_disk_leaves_no_partial_report_and_names_it(tmp_path, monkeypatch, fmt):
    import errno
    import pathlib

    def write_text(self, text, encoding=None):
        with open(self, "w", encoding=encoding) as f:
            f.write(text[:len(text) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")  # as write(2): no file name

    monkeypatch.setattr(pathlib.Path, "write_text", write_text)
    out = tmp_path / f"r.{fmt}"
    with pytest.raises(OSError) as e:
        render._write(notebook(), out, fmt)
    assert (e.value.errno, e.value.strerror, e.value.filename) == (errno.ENOSPC, "No space left on device", str(out))
    assert list(tmp_path.iterdir()) == []


def test_the_html_report_has_a_title_and_alt_texts():
    """nbconvert's page title was "Notebook" and the figures had no alt text: the store's name as the title, and
    each figure without an alt named by its number and its section (an alt already there is kept)."""
    page = ('<html><head><title>Notebook</title></head><body><h2 id="v">Volume &amp; load<a>¶</a></h2>'
            '<img src="data:image/png;base64,AA"><img alt="kept" src="b"><h3>Runs</h3><img src="c"/>'
            '<img alt="No description has been provided for this image" src="d"></body></html>')
    got = render.accessible(page, "shgcn report: cora-p4.zarr")
    assert "<title>shgcn report: cora-p4.zarr</title>" in got and "Notebook" not in got
    assert '<img alt="figure 1: Volume &amp; load" src="data:image/png;base64,AA">' in got
    assert '<img alt="kept" src="b">' in got and '<img alt="figure 2: Runs" src="c"/>' in got
    assert '<img alt="figure 3: Runs" src="d">' in got  # nbconvert's placeholder replaced
