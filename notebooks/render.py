"""``pipeline report``: execute the report notebook headless with papermill
(its parameters cell takes the store and the run logs) and write HTML with
every figure embedded (nbconvert), or the executed notebook."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from importlib import resources
from pathlib import Path

from shgcn import store as store_mod
from shgcn.core.errors import UserError

from .tables import check_runs, load_runs

log = logging.getLogger(__name__)

NOTEBOOK = "quality_report.ipynb"  # package data of shgcn.notebooks


class ReportCellError(RuntimeError):
    """A notebook cell failed; the message holds the cell's error."""


# ---------------------------------------------------------------- render

FORMATS = {".html": "html", ".htm": "html", ".ipynb": "ipynb"}


def output_format(out: str | Path, fmt: str | None = None) -> str:
    """``html`` or ``ipynb``: ``fmt`` when given (an override), else from
    ``out``'s extension; :class:`UserError` (one line) for anything else."""
    if fmt is not None:
        if fmt not in ("html", "ipynb"):
            raise UserError(f"--format {fmt!r}: choose html or ipynb")
        return fmt
    ext = Path(out).suffix.lower()
    if ext not in FORMATS:
        raise UserError(f"{out}: unknown report format {ext or '(no extension)'!r}: "
                        "name the output .html or .ipynb (or pass --format html|ipynb)")
    return FORMATS[ext]


def _kernel_config(tmp: str):
    """Run the kernel over Unix sockets in ``tmp`` where the platform has them:
    over TCP, ipykernel warns on stderr that the traffic is not encrypted."""
    from traitlets.config import Config
    c = Config()
    if os.name == "posix":
        c.KernelManager.transport = "ipc"
        c.KernelManager.ip = str(Path(tmp) / "kernel")
    return c


# jupyter_client interrupts the kernel before asking it to shut down; on a busy machine the interrupt can land
# while the kernel still handles a message, and ipykernel then logs an ERROR line on stderr (nothing failed:
# cell errors come back as messages, ReportCellError). The kernel's own log is noise to a user.
KERNEL_ARGS = ["--IPKernelApp.log_level=CRITICAL"]

MARK = "shgcn quality report"  # in every report this writes: <meta name="generator">, or the notebook's metadata


def is_report(path: Path) -> bool:
    """A file :func:`render` wrote (the only kind ``--overwrite`` replaces)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 20)
    except OSError:
        return False
    return MARK.encode() in head


def check_out(out_path: Path, overwrite: bool) -> None:
    """The report may be written to ``out_path``: its directory exists, and an
    existing file there is replaced only with ``overwrite``, and only when it
    is a report this command wrote."""
    if not out_path.parent.is_dir():
        raise UserError(f"{out_path.parent}: directory does not exist")
    if out_path.is_dir():
        raise UserError(f"{out_path}: is a directory; name the report file, e.g. report.html")
    if out_path.exists() or out_path.is_symlink():
        if not overwrite:
            raise UserError(f"{out_path}: already exists (pass --overwrite to replace a report)")
        if out_path.is_symlink() or not out_path.is_file() or not is_report(out_path):  # a FIFO: not read (it blocks)
            raise UserError(f"{out_path}: not a report this command wrote; --overwrite replaces only those, so it "
                            "is left as it is")
    if not os.access(out_path.parent, os.W_OK):
        raise UserError(f"{out_path.parent}: cannot write into this directory (permission denied)")


def render(store_path: str, runs: list[str], out: str, fmt: str | None = None, timeout: int = 600,
           overwrite: bool = False) -> Path:
    """Execute the report notebook for ``store_path`` (and run logs) and
    write ``out``: HTML with embedded figures, or the executed notebook;
    ``fmt`` overrides the format that ``out``'s extension names.

    Raises :class:`UserError` for a missing store or log or an unknown
    format, :class:`ReportCellError` for a failing cell. Run logs of another
    store (part count, dataset) are left out of the report with a warning in
    it, and logged here.
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    s = store_mod.open_store(store_path)  # fail early, with the store's own message
    s.quality()  # the tables every section reads: a store without them is one line, not a notebook traceback
    _, refused = check_runs(s, load_runs(runs))  # and with the run logs' own messages
    fmt = output_format(out, fmt)
    out_path = Path(out)
    check_out(out_path, overwrite)
    for message in refused:
        log.warning("%s", message)
    params = {"store_path": str(Path(store_path).resolve()), "run_logs": [str(Path(r).resolve()) for r in runs]}
    with resources.as_file(resources.files("shgcn.notebooks") / NOTEBOOK) as source, \
            tempfile.TemporaryDirectory(prefix="shgcn-kernel-") as tmp:
        try:
            nb = papermill.execute_notebook(str(source), None, parameters=params, kernel_name="python3",
                                            progress_bar=False, execution_timeout=timeout, cwd=str(Path.cwd()),
                                            config=_kernel_config(tmp), extra_arguments=KERNEL_ARGS)
        except PapermillExecutionError as e:
            raise ReportCellError(f"{e.ename}: {e.evalue}\n" + "".join(e.traceback[-3:])) from None
    _write(nb, out_path, fmt)
    return out_path


def _write(nb, out_path: Path, fmt: str) -> None:
    """The executed notebook, or HTML without its code, atomically."""
    import nbformat

    if fmt == "ipynb":
        nb.metadata["generator"] = MARK
        text = nbformat.writes(nb)
    else:
        from nbconvert import HTMLExporter

        exporter = HTMLExporter()
        exporter.exclude_input = True
        exporter.exclude_input_prompt = True
        exporter.exclude_output_prompt = True
        store = nb.metadata.get("papermill", {}).get("parameters", {}).get("store_path", "a store")
        title = f"shgcn report: {Path(str(store)).name}"
        nb.metadata["title"] = title
        text, _ = exporter.from_notebook_node(nb)
        text = accessible(text, title)
        # self-contained: the report needs no require.js or MathJax from a CDN
        text = re.sub(r'<script[^>]*\bsrc="https?://[^"]*"[^>]*>\s*</script>', "", text)
        text = text.replace("<head>", f'<head>\n<meta name="generator" content="{MARK}">', 1)
    tmp_out = out_path.with_name(f".{out_path.name}.partial-{os.getpid()}")
    try:
        tmp_out.write_text(text, encoding="utf-8")
        os.replace(tmp_out, out_path)
    except BaseException as e:  # a full disk, Ctrl-C: nothing half-written stays behind
        with contextlib.suppress(OSError):
            tmp_out.unlink()
        if isinstance(e, OSError):  # write()'s ENOSPC names no file: the report's is the user's
            raise OSError(e.errno, e.strerror or str(e), str(out_path)) from None
        raise


NO_ALT = "No description has been provided for this image"


def accessible(html: str, title: str) -> str:
    """The HTML report with its page title (nbconvert's default is "Notebook") and an alt text on every figure
    that has none: ``figure N: the section it is in`` (the nearest heading before it)."""
    import html as html_mod

    html = re.sub(r"<title>.*?</title>", f"<title>{html_mod.escape(title)}</title>", html, count=1, flags=re.S)
    out, pos, n, heading = [], 0, 0, "the report"
    for m in re.finditer(r"<h[1-4][^>]*>(.*?)</h[1-4]>|<img\b([^>]*)>", html, flags=re.S):
        if m.group(1) is not None:
            heading = re.sub(r"<[^>]+>|¶", "", m.group(1)).strip() or heading
            continue
        attrs = re.sub(rf'\s*alt="{NO_ALT}"', "", m.group(2))  # nbconvert's placeholder is no description
        if re.search(r"\balt\s*=", attrs):
            continue
        n += 1
        alt = html_mod.escape(f"figure {n}: {html_mod.unescape(heading)}", quote=True)
        out += [html[pos:m.start()], f'<img alt="{alt}"{attrs if attrs.startswith((" ", "/")) else " " + attrs}>']
        pos = m.end()
    return "".join(out) + html[pos:]
