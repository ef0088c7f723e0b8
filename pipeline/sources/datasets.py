"""Registry of named datasets and where their files are found.

Lookup order for a dataset's files: ``--data-dir``, then ``$SHGCN_DATA_DIR``,
then the user cache directory (``$XDG_CACHE_HOME/shgcn`` or
``~/.cache/shgcn``). Each directory is laid out like the download sites
(``planetoid/``, ``snap/``, ...). A missing file is downloaded from its
official URL into the cache directory; without network access the error
says where the file was looked for.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError

log = logging.getLogger(__name__)

ENV_VAR = "SHGCN_DATA_DIR"


@dataclass(frozen=True)
class Dataset:
    """A named dataset.

    Attributes
    ----------
    name : str
    files : tuple of str
        Paths relative to a data directory; the first is the one read.
    urls : tuple of str
        Official download URL of each file, in the same order.
    format : str
        Reader name (see :mod:`pipeline.readers`).
    directed : bool
        Default direction (``--undirected`` / ``--directed`` override it).
    nodes, edges : int
        Published counts (directed arcs, or undirected pairs), as the
        publisher counts them: for soc-slashdot0902 that includes
        ``self_loops`` lines, which the pipeline removes.
    feature_norm : str
        Default feature preprocessing (``row`` for Planetoid, as Kipf & Welling).
    self_loops : int
        Self-loop lines included in the published edge count (the pipeline
        removes them; Planetoid counts already exclude theirs).
    """

    name: str
    files: tuple[str, ...]
    urls: tuple[str, ...]
    format: str
    directed: bool
    nodes: int
    edges: int
    description: str = ""
    self_loops: int = 0
    feature_norm: str = "none"


def _planetoid(name: str, nodes: int, edges: int, desc: str) -> Dataset:
    exts = ("graph", "x", "y", "tx", "ty", "allx", "ally", "test.index")
    return Dataset(
        name=name,
        files=tuple(f"planetoid/ind.{name}.{e}" for e in exts),
        urls=tuple(f"https://github.com/kimiyoung/planetoid/raw/master/data/ind.{name}.{e}" for e in exts),
        format="planetoid", directed=False, nodes=nodes, edges=edges, description=desc, feature_norm="row")


REGISTRY: dict[str, Dataset] = {d.name: d for d in [
    _planetoid("cora", 2708, 5278, "Cora citations, 1433 features, 7 classes, Planetoid split"),
    _planetoid("citeseer", 3327, 4552, "CiteSeer citations, 3703 features, 6 classes, Planetoid split"),
    _planetoid("pubmed", 19717, 44324, "PubMed citations, 3 classes (allx missing offline: use --features random:D)"),
    Dataset("soc-slashdot0902", ("snap/soc-Slashdot0902.txt.gz",),
            ("https://snap.stanford.edu/data/soc-Slashdot0902.txt.gz",),
            "edgelist", True, 82168, 948464, "Slashdot Zoo social network, Feb 2009 (directed)", self_loops=78303),
    Dataset("facebook", ("snap/facebook_combined.txt.gz",),
            ("https://snap.stanford.edu/data/facebook_combined.txt.gz",),
            "edgelist", False, 4039, 88234, "Facebook ego networks, combined"),
    Dataset("ca-astroph", ("netrepo/ca-AstroPh.txt",),
            ("https://raw.githubusercontent.com/bokveizen/distance-decaying-core/main/data/ca-AstroPh.txt",),
            "edgelist", False, 17903, 196972, "Astro-physics collaboration network"),
    Dataset("luxembourg-osm", ("suitesparse/luxembourg_osm.mtx",),
            ("https://suitesparse-collection-website.herokuapp.com/MM/DIMACS10/luxembourg_osm.tar.gz",),
            "mtx", False, 114599, 119666, "Luxembourg road network (OpenStreetMap)"),
    Dataset("delaunay-n16", ("suitesparse/delaunay_n16.mtx",),
            ("https://suitesparse-collection-website.herokuapp.com/MM/DIMACS10/delaunay_n16.tar.gz",),
            "mtx", False, 65536, 196575, "Delaunay triangulation of 2^16 random points"),
    Dataset("4elt", ("metis/4elt.graph",),
            ("https://raw.githubusercontent.com/KarypisLab/METIS/master/graphs/4elt.graph",),
            "metis", False, 15606, 45878, "2D finite-element mesh"),
]}


def lookup(name: str) -> Dataset:
    try:
        return REGISTRY[name.lower()]
    except KeyError:
        raise UserError(f"unknown dataset {name!r}; known datasets: {', '.join(sorted(REGISTRY))} "
                        "(or give a file path, or rmat:/sbm: for a generated graph)") from None


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "shgcn"


def search_dirs(data_dir: str | Path | None) -> list[Path]:
    dirs = []
    if data_dir:
        dirs.append(Path(data_dir))
    if os.environ.get(ENV_VAR):
        dirs.append(Path(os.environ[ENV_VAR]))
    dirs.append(cache_dir())
    return dirs


def locate(ds: Dataset, data_dir: str | Path | None = None, download: bool = True) -> Path:
    """Path of ``ds``'s main file, downloading its files if none of the
    search directories has them all."""
    dirs = search_dirs(data_dir)
    for d in dirs:
        if all((d / f).exists() or _optional(ds, f) for f in ds.files):
            return d / ds.files[0]
    if not download:
        raise _missing(ds, dirs, None)
    target = cache_dir()
    errors: list[str] = []
    new_dirs = sorted({d for rel in ds.files for d in (target / rel).parents if not d.exists()}, key=lambda d: -len(d.parts))
    for rel, url in zip(ds.files, ds.urls):
        dest = target / rel
        if dest.exists():
            continue
        try:
            _download(url, dest)
        except OSError as e:
            if _optional(ds, rel):
                continue
            errors.append(f"{url}: {e}")
            break
    if errors:
        for d in new_dirs:  # the directories this call made, if the failed download left them empty
            with contextlib.suppress(OSError):
                d.rmdir()
        raise _missing(ds, dirs, errors[0])
    return target / ds.files[0]


def _optional(ds: Dataset, rel: str) -> bool:
    # PubMed's allx is often absent from offline copies; the reader copes.
    return ds.name == "pubmed" and rel.endswith(".allx")


def _missing(ds: Dataset, dirs: list[Path], err: str | None) -> UserError:
    where = ", ".join(str(d) for d in dirs)
    msg = f"dataset {ds.name!r}: {ds.files[0]} not found under {where}"
    if err:
        msg += f"; download failed ({err})"
    return UserError(msg + f"; pass --data-dir or set {ENV_VAR}")


def _download(url: str, dest: Path) -> None:
    """Download ``url`` to ``dest`` atomically; ``.tar.gz`` archives from
    SuiteSparse are unpacked to the ``.mtx`` member named like ``dest``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    log.info("downloading %s", url)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        raw = Path(tmp) / "download"
        with urllib.request.urlopen(url, timeout=60) as r, open(raw, "wb") as f:
            shutil.copyfileobj(r, f)
        if url.endswith(".tar.gz") and not dest.name.endswith(".tar.gz"):
            import tarfile
            with tarfile.open(raw) as t:
                member = next((m for m in t.getmembers() if m.name.endswith("/" + dest.name)), None)
                if member is None:
                    raise OSError(f"{dest.name} not in archive")
                src = t.extractfile(member)
                if src is None:
                    raise OSError(f"{dest.name} in the archive is not a regular file")
                with open(raw.with_suffix(".x"), "wb") as f:
                    shutil.copyfileobj(src, f)
                raw = raw.with_suffix(".x")
        os.replace(raw, dest)
