"""Registry of named datasets, their published counts, where their files
come from (URL and sha256) and where they are found.

Lookup order for a dataset's files: ``--data-dir``, then ``$SHGCN_DATA_DIR``,
then the user cache directory (``$XDG_CACHE_HOME/shgcn`` or
``~/.cache/shgcn``). Each directory is laid out like the download sites
(``planetoid/``, ``snap/``, ``ogb/ogbn_arxiv/``, ``saint/reddit/``...). A
missing dataset is downloaded with pooch (hash check, retries, a progress
bar on a terminal) into the cache directory; without network access the
error is one line that says where the files were looked for.

Hashes: the sha256 of every file this project could read byte for byte
offline is recorded. OGB's zip archives, GraphSAINT's files (served by
Google Drive), PubMed's ``allx`` and SuiteSparse's archives could not be
obtained here, so their hash is :data:`NO_HASH` (a named shortcut: pooch
downloads them unchecked).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError

log = logging.getLogger(__name__)

ENV_VAR = "SHGCN_DATA_DIR"
NO_HASH = None  # shortcut: no published hash could be read offline; pooch then downloads without a check


@dataclass(frozen=True)
class Dataset:
    """A named dataset.

    Attributes
    ----------
    name : str
    files : tuple of str
        Paths relative to a data directory that must all be there; the first
        is the one read, unless ``root`` names a directory to read.
    urls : tuple of str
        Official download URL of each file, in the same order; with
        ``archive`` ``zip``, one URL: a zip whose top directory becomes ``root``.
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
    hashes : tuple of str or None
        sha256 of each URL's download (:data:`NO_HASH` where none could be had).
    root : str
        A directory to read (OGB, GraphSAINT), relative to the data directory.
    archive : str
        ``zip``: ``urls[0]`` is one archive holding every file.
    split_scheme : str or None
        OGB: the split the dataset is published with (``split/<scheme>``).
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
    hashes: tuple[str | None, ...] = ()
    root: str = ""
    archive: str = ""
    split_scheme: str | None = None

    @property
    def path(self) -> str:
        """What the reader reads, relative to a data directory."""
        return self.root or self.files[0]


_PLANETOID_SHA256 = {  # sha256 of the files at the URLs (byte-for-byte copies in ../shared/datasets)
    "cora": ("58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
             "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
             "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
             "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
             "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
             "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
             "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
             "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875"),
    "citeseer": ("d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7",
                 "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6",
                 "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924",
                 "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21",
                 "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce",
                 "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668",
                 "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95",
                 "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4"),
    "pubmed": ("5b89f0036ca22909471f1e6558eb42fa06e0c730a577bde5b058b40638f81dc9",
               "fbe9cb5c47200d1b7769a26e579be3b7130b556831f9d850e77c4c74f2599b33",
               "e6c807633307a07ed659249006536a147c7999c797f11a2560752990181b41b3",
               "4eb5f5d0f30f26497eb0ac6ac9719d09c67e284f1ed0385c93f3ef27a671da3d",
               "ee2e0d4819d9fbcc403689c3bf2e49face401b605932f093bc58ab6461130fdd",
               NO_HASH,  # allx: not in the offline copy
               "0c37bbe3b5014ec365e9d393cf4791925e5ed94fb194305d74f064a8d7b50f0e",
               "b101d421688bbaecbd82e8a18f1e282378d6830f3a37666f28ebc47f844341b5"),
}


def _planetoid(name: str, nodes: int, edges: int, desc: str) -> Dataset:
    exts = ("graph", "x", "y", "tx", "ty", "allx", "ally", "test.index")
    return Dataset(
        name=name,
        files=tuple(f"planetoid/ind.{name}.{e}" for e in exts),
        urls=tuple(f"https://github.com/kimiyoung/planetoid/raw/master/data/ind.{name}.{e}" for e in exts),
        format="planetoid", directed=False, nodes=nodes, edges=edges, description=desc, feature_norm="row",
        hashes=_PLANETOID_SHA256[name])


def _ogb(name: str, download: str, directed: bool, nodes: int, edges: int, scheme: str, *, desc: str,
         layout: str = "csv") -> Dataset:
    """An OGB node-property dataset: one zip from OGB's site, unpacked to ``ogb/<name with _>/``."""
    root = f"ogb/{name.replace('-', '_')}"
    raw = ("raw/data.npz", "raw/node-label.npz") if layout == "npz" else ("raw/edge.csv.gz", "raw/node-label.csv.gz")
    return Dataset(name, tuple(f"{root}/{f}" for f in (*raw, f"split/{scheme}/train.csv.gz")),
                   (f"https://snap.stanford.edu/ogb/data/nodeproppred/{download}.zip",), "ogb", directed, nodes,
                   edges, desc, hashes=(NO_HASH,), root=root, archive="zip", split_scheme=scheme)


_GDRIVE = "https://docs.google.com/uc?export=download&id={}&confirm=t"
_SAINT_FILES = ("adj_full.npz", "feats.npy", "class_map.json", "role.json")


def _saint(name: str, ids: tuple[str, str, str, str], nodes: int, edges: int, desc: str) -> Dataset:
    """A GraphSAINT dataset: the authors' four files (on Google Drive; the IDs PyG's loaders use)."""
    root = f"saint/{name}"
    return Dataset(name, tuple(f"{root}/{f}" for f in _SAINT_FILES), tuple(_GDRIVE.format(i) for i in ids), "saint",
                   False, nodes, edges, desc, hashes=(NO_HASH,) * 4, root=root)


REGISTRY: dict[str, Dataset] = {d.name.lower(): d for d in [
    _planetoid("cora", 2708, 5278, "Cora citations, 1433 features, 7 classes, Planetoid split"),
    _planetoid("citeseer", 3327, 4552, "CiteSeer citations, 3703 features, 6 classes, Planetoid split"),
    _planetoid("pubmed", 19717, 44324, "PubMed citations, 3 classes (allx missing offline: use --features random:D)"),
    Dataset("soc-slashdot0902", ("snap/soc-Slashdot0902.txt.gz",),
            ("https://snap.stanford.edu/data/soc-Slashdot0902.txt.gz",),
            "edgelist", True, 82168, 948464, "Slashdot Zoo social network, Feb 2009 (directed)", self_loops=78303,
            hashes=("65072f0a2d98a444967bf3b8379a87e03292f2f9f8924f4fe470ddd047c95553",)),
    Dataset("facebook", ("snap/facebook_combined.txt.gz",),
            ("https://snap.stanford.edu/data/facebook_combined.txt.gz",),
            "edgelist", False, 4039, 88234, "Facebook ego networks, combined",
            hashes=("7cc432d08910b3a940ce90f7da94c13aaf048b04724eafcdf3050b28acc49daf",)),
    Dataset("ca-astroph", ("netrepo/ca-AstroPh.txt",),
            ("https://raw.githubusercontent.com/bokveizen/distance-decaying-core/main/data/ca-AstroPh.txt",),
            "edgelist", False, 17903, 196972, "Astro-physics collaboration network",
            hashes=("7771181adc0ab4dc598337c400ca288c9752f213a14cfbfbbfde147866f44534",)),
    Dataset("luxembourg-osm", ("suitesparse/luxembourg_osm.mtx",),
            ("https://suitesparse-collection-website.herokuapp.com/MM/DIMACS10/luxembourg_osm.tar.gz",),
            "mtx", False, 114599, 119666, "Luxembourg road network (OpenStreetMap)", hashes=(NO_HASH,)),
    Dataset("delaunay-n16", ("suitesparse/delaunay_n16.mtx",),
            ("https://suitesparse-collection-website.herokuapp.com/MM/DIMACS10/delaunay_n16.tar.gz",),
            "mtx", False, 65536, 196575, "Delaunay triangulation of 2^16 random points", hashes=(NO_HASH,)),
    Dataset("4elt", ("metis/4elt.graph",),
            ("https://raw.githubusercontent.com/KarypisLab/METIS/master/graphs/4elt.graph",),
            "metis", False, 15606, 45878, "2D finite-element mesh",
            hashes=("246997040b286050864a4b4ebbe387026e9c317eef504e6fc79a97cc0af5967f",)),
    _ogb("ogbn-arxiv", "arxiv", True, 169343, 1166243, "time",
         desc="OGB arXiv citations, 128 features, 40 classes, split by year (directed; --undirected as usual)"),
    _ogb("ogbn-products", "products", False, 2449029, 61859140, "sales_ranking",
         desc="OGB Amazon co-purchases, 100 features, 47 classes, split by sales rank"),
    _ogb("ogbn-papers100M", "papers100M-bin", True, 111059956, 1615685872, "time",
         desc="OGB MAG papers, 128 features, 172 classes (1.5M labelled), split by year (npz layout, 57 GB zip)",
         layout="npz"),
    _saint("reddit", ("1sncK996BM5lpuDf75lDFqCiDZyErc1c2", "1ZsHaJ0ussP1W722krmEIp_8pwKAoi5b3",
                      "1JF3Pjv9OboMNYs2aXRQGbJbc4t_nDd5u", "1nJIKd77lcAGU4j-kVNx_AIGEkveIKz3A"), 232965, 11606919,
           "GraphSAINT Reddit posts, 602 features, 41 classes"),
    _saint("flickr", ("1crmsTbd1-2sEXsGwa2IKnIB7Zd3TmUsy", "1join-XdvX3anJU_MLVtick7MgeAQiWIZ",
                      "1uxIkbtg5drHTsKt-PAsZZ4_yJmgFmle9", "1htXCtuktuCW8TR8KiKfrFDAxUgekQoV7"), 89250, 899756,
           "GraphSAINT Flickr images, 500 features, 7 classes"),
    _saint("yelp", ("1Juwx8HtDwSzmVIJ31ooVa1WljI4U5JnA", "1Zy6BZH_zLEjKlEFSduKE5tV9qqA_8VtM",
                    "1VUcBGr0T0-klqerjAjxRmAqFuld_SMWU", "1NI5pa5Chpd-52eSmLW60OnB3WS5ikxq_"), 716847, 6977410,
           "GraphSAINT Yelp users, 300 features, 100 labels (multi-label: sigmoid loss, micro-F1)"),
    _saint("amazon", ("17qhNA8H1IpbkkR-T2BmPQm8QNW5do-aa", "10SW8lCvAj-kb6ckkfTOC5y0l8XXdtMxj",
                      "1LIl4kimLfftj4-7NmValuWyCQE8AaE7P", "1npK9xlmbnjNkV80hK2Q68wTEVOFjnt4K"), 1598960, 132169734,
           "GraphSAINT Amazon products, 200 features, 107 labels (multi-label; PyG counts 1,569,960 nodes)"),
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
    """Path of what ``ds``'s reader reads, downloading the dataset into the
    cache directory if none of the search directories has all its files."""
    dirs = search_dirs(data_dir)
    for d in dirs:
        if all((d / f).exists() or _optional(ds, f) for f in ds.files):
            return d / ds.path
    if not download:
        raise _missing(ds, dirs, None)
    target = cache_dir()
    # the directories this call makes: removed again if a failed download leaves them empty
    new_dirs = sorted({d for rel in ds.files for d in (target / rel).parents if not d.exists()},
                      key=lambda d: -len(d.parts))
    try:
        if ds.archive == "zip":
            _fetch_zip(ds, target)
        else:
            _fetch_files(ds, target)
    except (OSError, ValueError) as e:  # requests' errors are OSErrors; a hash mismatch is a ValueError
        for d in new_dirs:
            with contextlib.suppress(OSError):
                d.rmdir()
        raise _missing(ds, dirs, _why(e)) from None
    return target / ds.path


def _optional(ds: Dataset, rel: str) -> bool:
    # PubMed's allx is often absent from offline copies; the reader copes.
    return ds.name == "pubmed" and rel.endswith(".allx")


def _missing(ds: Dataset, dirs: list[Path], err: str | None) -> UserError:
    where = ", ".join(str(d) for d in dirs)
    msg = f"dataset {ds.name!r}: {ds.path} not found under {where}"
    if err:
        msg += f"; download failed ({err})"
    return UserError(msg + f"; pass --data-dir or set {ENV_VAR}")


def _why(e: Exception) -> str:
    """One short reason for a failed download."""
    name = type(e).__name__
    if name in ("ConnectionError", "ConnectTimeout", "NameResolutionError", "ReadTimeout", "Timeout"):
        return "the network is unavailable"
    return f"{name}: {(str(e).splitlines() or [''])[0][:160]}"


def _pooch(target: Path, ds: Dataset, names: list[str]):
    """A pooch over ``target`` that knows ``names`` (paths relative to it), their URLs and hashes."""
    import pooch

    # our own log says what is downloaded; pooch's handler would print its retries besides the one-line error
    pooch.get_logger().setLevel(logging.DEBUG if log.isEnabledFor(logging.DEBUG) else logging.WARNING)
    hashes = ds.hashes or (NO_HASH,) * len(ds.urls)
    return pooch.create(path=target, base_url="", registry=dict(zip(names, hashes)), urls=dict(zip(names, ds.urls)),
                        retry_if_failed=2)


def _progress() -> bool:
    return sys.stderr.isatty()


def _fetch_files(ds: Dataset, target: Path) -> None:
    """Each missing file from its URL; a SuiteSparse ``.tar.gz`` gives its ``.mtx`` member."""
    names = [rel if not url.endswith(".tar.gz") or rel.endswith(".tar.gz") else rel.rsplit(".", 1)[0] + ".tar.gz"
             for rel, url in zip(ds.files, ds.urls)]
    p = _pooch(target, ds, names)
    for rel, name in zip(ds.files, names):
        if (target / rel).exists():
            continue
        log.info("downloading %s for dataset %s", p.get_url(name), ds.name)
        try:
            got = Path(p.fetch(name, progressbar=_progress()))
        except (OSError, ValueError):
            if _optional(ds, rel):
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
