"""Registry of named datasets, their published counts, where their files
come from (URL and sha256) and where they are found.

Lookup order for a dataset's files: ``--data-dir``, then ``$SHGCN_DATA_DIR``,
then the user cache directory (``$XDG_CACHE_HOME/shgcn`` or
``~/.cache/shgcn``). Each directory is laid out like the download sites
(``planetoid/``, ``snap/``, ``suitesparse/``, ``ogb/ogbn_arxiv/``,
``saint/reddit/``...); the first directory names the publisher. A missing
dataset is downloaded (:mod:`.fetch`) into the cache directory; without
network access the error is one line that names the dataset, its URL and
the exact path under the data directory where the file goes.

Counts: as published on the dataset's page (SNAP's "Dataset statistics",
SuiteSparse's matrix page, OGB's and GraphSAINT's papers); a build compares
the graph it read with them (:func:`count_mismatch`) and warns on a
difference.

Hashes: the sha256 of every file this project could read byte for byte
offline is recorded. The other files (OGB's zips, GraphSAINT's files on
Google Drive, PubMed's ``allx``, SuiteSparse's archives, and the SNAP graphs
not kept offline) could not be obtained here, so their hash is
:data:`NO_HASH` (a named shortcut: pooch downloads them unchecked).
"""

from __future__ import annotations

import contextlib
import logging
import os
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
    features, classes : int
        Published feature width and number of classes (0: the dataset has
        none; a build generates random ones).
    size : int or None
        Bytes to download (all URLs), where known exactly; None: unknown.
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
    features: int = 0
    classes: int = 0
    size: int | None = None

    @property
    def path(self) -> str:
        """What the reader reads, relative to a data directory."""
        return self.root or self.files[0]

    @property
    def publisher(self) -> str:
        """Who publishes the files: the first directory of their layout."""
        top = self.files[0].split("/", 1)[0]
        return _PUBLISHERS.get(top, top)

    def optional(self, rel: str) -> bool:
        """A file the reader copes without: PubMed's allx, often absent from offline copies."""
        return self.name == "pubmed" and rel.endswith(".allx")


_PUBLISHERS = {"planetoid": "Planetoid", "snap": "SNAP", "netrepo": "NetRepo", "suitesparse": "SuiteSparse",
               "metis": "METIS", "ogb": "OGB", "saint": "GraphSAINT"}


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


def _planetoid(name: str, nodes: int, edges: int, shape: tuple[int, int], size: int | None, desc: str) -> Dataset:
    exts = ("graph", "x", "y", "tx", "ty", "allx", "ally", "test.index")
    return Dataset(
        name=name,
        files=tuple(f"planetoid/ind.{name}.{e}" for e in exts),
        urls=tuple(f"https://github.com/kimiyoung/planetoid/raw/master/data/ind.{name}.{e}" for e in exts),
        format="planetoid", directed=False, nodes=nodes, edges=edges, description=desc, feature_norm="row",
        hashes=_PLANETOID_SHA256[name], features=shape[0], classes=shape[1], size=size)


def _ogb(name: str, download: str, directed: bool, nodes: int, edges: int, scheme: str, *, desc: str,
         shape: tuple[int, int], layout: str = "csv") -> Dataset:
    """An OGB node-property dataset: one zip from OGB's site, unpacked to ``ogb/<name with _>/``."""
    root = f"ogb/{name.replace('-', '_')}"
    raw = ("raw/data.npz", "raw/node-label.npz") if layout == "npz" else ("raw/edge.csv.gz", "raw/node-label.csv.gz")
    return Dataset(name, tuple(f"{root}/{f}" for f in (*raw, f"split/{scheme}/train.csv.gz")),
                   (f"https://snap.stanford.edu/ogb/data/nodeproppred/{download}.zip",), "ogb", directed, nodes,
                   edges, desc, hashes=(NO_HASH,), root=root, archive="zip", split_scheme=scheme, features=shape[0],
                   classes=shape[1])


_GDRIVE = "https://docs.google.com/uc?export=download&id={}&confirm=t"
_SAINT_FILES = ("adj_full.npz", "feats.npy", "class_map.json", "role.json")


def _saint(name: str, ids: tuple[str, str, str, str], nodes: int, edges: int, shape: tuple[int, int],
           desc: str) -> Dataset:
    """A GraphSAINT dataset: the authors' four files (on Google Drive; the IDs PyG's loaders use)."""
    root = f"saint/{name}"
    return Dataset(name, tuple(f"{root}/{f}" for f in _SAINT_FILES), tuple(_GDRIVE.format(i) for i in ids), "saint",
                   False, nodes, edges, desc, hashes=(NO_HASH,) * 4, root=root, features=shape[0], classes=shape[1])


def _snap(name: str, file: str, directed: bool, nodes: int, edges: int, desc: str, *, folder: str = "data") -> Dataset:
    """A SNAP edge list (``.txt.gz``; the ``com-*`` graphs live in ``data/bigdata/communities``)."""
    return Dataset(name, (f"snap/{file}",), (f"https://snap.stanford.edu/{folder}/{file}",), "edgelist", directed,
                   nodes, edges, desc, hashes=(NO_HASH,))


def _suitesparse(name: str, matrix: str, directed: bool, nodes: int, edges: int, desc: str) -> Dataset:
    """A SuiteSparse matrix (``group/name``): its ``.tar.gz`` (Matrix Market) gives ``suitesparse/<name>.mtx``."""
    return Dataset(name, (f"suitesparse/{matrix.split('/')[1]}.mtx",),
                   (f"https://suitesparse-collection-website.herokuapp.com/MM/{matrix}.tar.gz",), "mtx",
                   directed, nodes, edges, desc, hashes=(NO_HASH,))


# One line per dataset. Counts: cora..4elt as checked against ../shared/datasets (tests/pipeline/sources);
# amazon0601..roadNet-CA from SNAP's "Dataset statistics" (roadNet-CA: 2,766,607 undirected pairs, the file lists
# both directions: 5,533,214 lines); coPapersDBLP and Gleich/flickr from SuiteSparse's pages (undirected pairs:
# nnz / 2 for a symmetric matrix); OGB's from its paper and site; GraphSAINT's from its paper (Table 1).
REGISTRY: dict[str, Dataset] = {d.name.lower(): d for d in [
    _planetoid("cora", 2708, 5278, (1433, 7), 572444, "Cora citations, Planetoid split"),
    _planetoid("citeseer", 3327, 4552, (3703, 6), 1036188, "CiteSeer citations, Planetoid split"),
    _planetoid("pubmed", 19717, 44324, (500, 3), None, "PubMed citations (allx missing offline: use --features random:D)"),
    Dataset("soc-slashdot0902", ("snap/soc-Slashdot0902.txt.gz",),
            ("https://snap.stanford.edu/data/soc-Slashdot0902.txt.gz",),
            "edgelist", True, 82168, 948464, "Slashdot Zoo social network, Feb 2009 (directed)", self_loops=78303,
            hashes=("65072f0a2d98a444967bf3b8379a87e03292f2f9f8924f4fe470ddd047c95553",), size=3246522),
    Dataset("facebook", ("snap/facebook_combined.txt.gz",),
            ("https://snap.stanford.edu/data/facebook_combined.txt.gz",),
            "edgelist", False, 4039, 88234, "Facebook ego networks, combined",
            hashes=("7cc432d08910b3a940ce90f7da94c13aaf048b04724eafcdf3050b28acc49daf",), size=218575),
    Dataset("ca-astroph", ("netrepo/ca-AstroPh.txt",),
            ("https://raw.githubusercontent.com/bokveizen/distance-decaying-core/main/data/ca-AstroPh.txt",),
            "edgelist", False, 17903, 196972, "Astro-physics collaboration network",
            hashes=("7771181adc0ab4dc598337c400ca288c9752f213a14cfbfbbfde147866f44534",), size=2712060),
    Dataset("luxembourg-osm", ("suitesparse/luxembourg_osm.mtx",),
            ("https://suitesparse-collection-website.herokuapp.com/MM/DIMACS10/luxembourg_osm.tar.gz",),
            "mtx", False, 114599, 119666, "Luxembourg road network (OpenStreetMap)", hashes=(NO_HASH,)),
    Dataset("delaunay-n16", ("suitesparse/delaunay_n16.mtx",),
            ("https://suitesparse-collection-website.herokuapp.com/MM/DIMACS10/delaunay_n16.tar.gz",),
            "mtx", False, 65536, 196575, "Delaunay triangulation of 2^16 random points", hashes=(NO_HASH,)),
    Dataset("4elt", ("metis/4elt.graph",),
            ("https://raw.githubusercontent.com/KarypisLab/METIS/master/graphs/4elt.graph",),
            "metis", False, 15606, 45878, "2D finite-element mesh",
            hashes=("246997040b286050864a4b4ebbe387026e9c317eef504e6fc79a97cc0af5967f",), size=516441),
    # the paper's graphs (Demirci, Haldar, Ferhatosmanoglu): no features or labels, a build generates them
    _snap("amazon0601", "amazon0601.txt.gz", True, 403394, 3387388, "Amazon co-purchases, June 1 2003 (directed)"),
    _snap("cit-Patents", "cit-Patents.txt.gz", True, 3774768, 16518948, "US patent citations 1975-1999 (directed)"),
    _snap("com-Amazon", "com-amazon.ungraph.txt.gz", False, 334863, 925872, "Amazon co-purchases, communities",
          folder="data/bigdata/communities"),
    _snap("com-Youtube", "com-youtube.ungraph.txt.gz", False, 1134890, 2987624, "YouTube friendships",
          folder="data/bigdata/communities"),
    _snap("roadNet-CA", "roadNet-CA.txt.gz", False, 1965206, 2766607, "California road network"),
    _suitesparse("coPapersDBLP", "DIMACS10/coPapersDBLP", False, 540486, 15245729, "DBLP co-papers (DIMACS10)"),
    _suitesparse("flickr-gleich", "Gleich/flickr", True, 820878, 9837214,
                 "Flickr contacts, SuiteSparse Gleich/flickr (directed; 'flickr' is GraphSAINT's)"),
    # the usual large GNN benchmarks, with their features, labels and split
    _ogb("ogbn-arxiv", "arxiv", True, 169343, 1166243, "time", shape=(128, 40),
         desc="OGB arXiv citations, split by year (directed; --undirected as usual)"),
    _ogb("ogbn-products", "products", False, 2449029, 61859140, "sales_ranking", shape=(100, 47),
         desc="OGB Amazon co-purchases, split by sales rank"),
    _ogb("ogbn-papers100M", "papers100M-bin", True, 111059956, 1615685872, "time", shape=(128, 172),
         desc="OGB MAG papers (1.5M labelled), split by year (npz layout, 57 GB zip)", layout="npz"),
    _saint("reddit", ("1sncK996BM5lpuDf75lDFqCiDZyErc1c2", "1ZsHaJ0ussP1W722krmEIp_8pwKAoi5b3",
                      "1JF3Pjv9OboMNYs2aXRQGbJbc4t_nDd5u", "1nJIKd77lcAGU4j-kVNx_AIGEkveIKz3A"), 232965, 11606919,
           (602, 41), "GraphSAINT Reddit posts"),
    _saint("flickr", ("1crmsTbd1-2sEXsGwa2IKnIB7Zd3TmUsy", "1join-XdvX3anJU_MLVtick7MgeAQiWIZ",
                      "1uxIkbtg5drHTsKt-PAsZZ4_yJmgFmle9", "1htXCtuktuCW8TR8KiKfrFDAxUgekQoV7"), 89250, 899756,
           (500, 7), "GraphSAINT Flickr images"),
    _saint("yelp", ("1Juwx8HtDwSzmVIJ31ooVa1WljI4U5JnA", "1Zy6BZH_zLEjKlEFSduKE5tV9qqA_8VtM",
                    "1VUcBGr0T0-klqerjAjxRmAqFuld_SMWU", "1NI5pa5Chpd-52eSmLW60OnB3WS5ikxq_"), 716847, 6977410,
           (300, 100), "GraphSAINT Yelp users, 100 labels (multi-label: sigmoid loss, micro-F1)"),
    _saint("amazon", ("17qhNA8H1IpbkkR-T2BmPQm8QNW5do-aa", "10SW8lCvAj-kb6ckkfTOC5y0l8XXdtMxj",
                      "1LIl4kimLfftj4-7NmValuWyCQE8AaE7P", "1npK9xlmbnjNkV80hK2Q68wTEVOFjnt4K"), 1598960, 132169734,
           (200, 107), "GraphSAINT Amazon products, 107 labels (multi-label; PyG counts 1,569,960 nodes)"),
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


def found_in(ds: Dataset, data_dir: str | Path | None = None) -> Path | None:
    """The first search directory holding all of ``ds``'s files (None: none does)."""
    for d in search_dirs(data_dir):
        if all((d / f).exists() or ds.optional(f) for f in ds.files):
            return d
    return None


def locate(ds: Dataset, data_dir: str | Path | None = None, download: bool = True) -> Path:
    """Path of what ``ds``'s reader reads, downloading the dataset into the
    cache directory if none of the search directories has all its files."""
    from . import fetch

    found = found_in(ds, data_dir)
    if found is not None:
        return found / ds.path
    dirs = search_dirs(data_dir)
    if not download:
        raise _missing(ds, dirs, None)
    target = cache_dir()
    # the directories this call makes: removed again if a failed download leaves them empty
    new_dirs = sorted({d for rel in ds.files for d in (target / rel).parents if not d.exists()},
                      key=lambda d: -len(d.parts))
    try:
        fetch.download(ds, target)
    except (OSError, ValueError) as e:  # requests' errors are OSErrors; a hash mismatch is a ValueError
        for d in new_dirs:
            with contextlib.suppress(OSError):
                d.rmdir()
        raise _missing(ds, dirs, fetch.reason(e)) from None
    return target / ds.path


def placement(ds: Dataset, base: Path) -> str:
    """Where a user puts ``ds``'s files by hand under the data directory ``base``: each missing file's URL and path."""
    from .fetch import member_of_tar

    if ds.archive == "zip":
        return f"download {ds.urls[0]} and unzip it so that its top directory becomes {base / ds.root}"
    todo = [(rel, url) for rel, url in zip(ds.files, ds.urls) if not (base / rel).exists() and not ds.optional(rel)]
    return "; ".join(f"download {url} and put its {Path(rel).name} at {base / rel}" if member_of_tar(rel, url)
                     else f"download {url} to {base / rel}" for rel, url in todo)


def _missing(ds: Dataset, dirs: list[Path], err: str | None) -> UserError:
    where = ", ".join(str(d) for d in dirs)
    msg = f"dataset {ds.name!r}: {ds.path} not found under {where}"
    if err:
        msg += f"; download failed ({err})"
    return UserError(f"{msg}; {placement(ds, dirs[0])} (or pass --data-dir DIR or set {ENV_VAR})")


def count_mismatch(ds: Dataset, n: int, edges: int, directed: bool) -> str | None:
    """A warning when a build's graph of ``ds`` (``n`` vertices, ``edges`` after
    removing self loops and duplicates, read ``directed`` or not) differs
    from the published counts; edges are compared only when read as the
    dataset is published."""
    want = ds.edges - ds.self_loops
    if n == ds.nodes and (edges == want or directed != ds.directed):
        return None
    kind = "directed" if directed else "undirected"
    loops = f" (its {ds.edges:,} less {ds.self_loops:,} self loops)" if ds.self_loops else ""
    return (f"{ds.name}: read {n:,} vertices and {edges:,} {kind} edges, but {ds.publisher} publishes {ds.nodes:,} "
            f"and {want:,}{loops}: a different version of the file, or a damaged one?")
