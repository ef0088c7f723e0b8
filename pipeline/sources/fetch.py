"""Downloading a registered dataset's files with pooch (sha256 check where
the registry records one, two retries, a progress bar on a terminal) into a
data directory laid out as :mod:`.datasets` expects: plain files to their
path, a SuiteSparse ``.tar.gz`` to its ``.mtx`` member, an OGB zip unpacked
to the dataset's ``root``. Every failure is an ``OSError`` or a
``ValueError`` (hash mismatch) for the caller to turn into one line; no
network access happens in tests (they replace :func:`download`)."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Protocol

log = logging.getLogger(__name__)


class Dataset(Protocol):
    """What a download needs of a registered dataset (:class:`.datasets.Dataset`; this module does not import it)."""

    @property
    def name(self) -> str: ...
    @property
    def files(self) -> tuple[str, ...]: ...
    @property
    def urls(self) -> tuple[str, ...]: ...
    @property
    def hashes(self) -> tuple[str | None, ...]: ...
    @property
    def root(self) -> str: ...
    @property
    def archive(self) -> str: ...

    def optional(self, rel: str) -> bool: ...


def download(ds: Dataset, target: Path) -> None:
    """Every missing file of ``ds`` into the data directory ``target``."""
    if ds.archive == "zip":
        _fetch_zip(ds, target)
    else:
        _fetch_files(ds, target)


def reason(e: Exception) -> str:
    """One short reason for a failed download."""
    name = type(e).__name__
    if name in ("ConnectionError", "ConnectTimeout", "NameResolutionError", "ReadTimeout", "Timeout"):
        return "the network is unavailable"
    return f"{name}: {(str(e).splitlines() or [''])[0][:160]}"


def member_of_tar(rel: str, url: str) -> bool:
    """A SuiteSparse file: the URL is a ``.tar.gz`` whose member ``rel`` names."""
    return url.endswith(".tar.gz") and not rel.endswith(".tar.gz")


def _pooch(target: Path, ds: Dataset, names: list[str]):
    """A pooch over ``target`` that knows ``names`` (paths relative to it), their URLs and hashes."""
    import pooch

    # our own log says what is downloaded; pooch's handler would print its retries besides the one-line error
    pooch.get_logger().setLevel(logging.DEBUG if log.isEnabledFor(logging.DEBUG) else logging.WARNING)
    hashes = ds.hashes or (None,) * len(ds.urls)
    return pooch.create(path=target, base_url="", registry=dict(zip(names, hashes)), urls=dict(zip(names, ds.urls)),
                        retry_if_failed=2)


def _progress() -> bool:
    return sys.stderr.isatty()


def _fetch_files(ds: Dataset, target: Path) -> None:
    """Each missing file from its URL; a SuiteSparse ``.tar.gz`` gives its ``.mtx`` member."""
    names = [rel.rsplit(".", 1)[0] + ".tar.gz" if member_of_tar(rel, url) else rel
             for rel, url in zip(ds.files, ds.urls)]
    p = _pooch(target, ds, names)
    for rel, name in zip(ds.files, names):
        if (target / rel).exists():
            continue
        log.info("downloading %s for dataset %s", p.get_url(name), ds.name)
        try:
            got = Path(p.fetch(name, progressbar=_progress()))
        except (OSError, ValueError):
            if ds.optional(rel):
                continue
            raise
        if got != target / rel:
            _untar_member(got, target / rel)


def _untar_member(archive: Path, dest: Path) -> None:
    import tarfile

    with tarfile.open(archive) as t, tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        member = next((m for m in t.getmembers() if m.name.endswith("/" + dest.name)), None)
        src = t.extractfile(member) if member is not None else None
        if src is None:
            raise OSError(f"{dest.name} not in {archive.name}")
        part = Path(tmp) / dest.name
        with open(part, "wb") as f:
            shutil.copyfileobj(src, f)
        os.replace(part, dest)
    archive.unlink()


def _fetch_zip(ds: Dataset, target: Path) -> None:
    """One zip holding a directory: unpacked next to ``root`` and renamed to it."""
    import zipfile

    name = f"{Path(ds.root).parent}/{ds.urls[0].rsplit('/', 1)[-1]}"
    p = _pooch(target, ds, [name])
    log.info("downloading %s for dataset %s (unpacked into %s)", ds.urls[0], ds.name, target / ds.root)
    archive = Path(p.fetch(name, progressbar=_progress()))
    dest = target / ds.root
    with zipfile.ZipFile(archive) as z, tempfile.TemporaryDirectory(dir=archive.parent) as tmp:
        top = {n.split("/", 1)[0] for n in z.namelist()}
        if len(top) != 1:
            raise OSError(f"{archive.name}: expected one top directory, found {sorted(top)[:3]}")
        z.extractall(tmp)
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(Path(tmp) / top.pop(), dest)
    archive.unlink()
