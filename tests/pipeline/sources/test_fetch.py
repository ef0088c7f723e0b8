"""Downloads (pipeline/sources/fetch.py) through a fake pooch that serves bytes from memory: plain files land at
their path, a SuiteSparse .tar.gz gives its .mtx member, an OGB zip is unpacked to the dataset's root, an optional
file may fail; the reasons of a failure are short. No network."""

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from shgcn.pipeline.sources import fetch
from shgcn.pipeline.sources.datasets import Dataset


class FakePooch:
    """pooch.create's object: fetch(name) writes the bytes served for that name's URL (missing: ConnectionError)."""

    def __init__(self, path, registry, urls, served):
        self.path, self.urls, self.served = Path(path), urls, served
        self.asked = []

    def get_url(self, name):
        return self.urls[name]

    def fetch(self, name, progressbar=False):
        url = self.urls[name]
        self.asked.append(url)
        if url not in self.served:
            raise ConnectionError(f"cannot reach {url}")
        dest = self.path / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(self.served[url])
        return str(dest)


@pytest.fixture
def serve(monkeypatch):
    """served[url] = bytes; returns the dict and the list of pooches made."""
    import pooch

    served: dict[str, bytes] = {}
    made: list[FakePooch] = []

    def create(path, base_url, registry, urls, retry_if_failed):
        made.append(FakePooch(path, registry, urls, served))
        return made[-1]

    monkeypatch.setattr(pooch, "create", create)
    return served, made


def _tar(member: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        info = tarfile.TarInfo(member)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_plain_files_land_at_their_paths(tmp_path, serve):
    served, made = serve
    ds = Dataset("g", ("snap/g.txt.gz", "snap/h.txt"), ("https://x/g.txt.gz", "https://x/h.txt"), "edgelist", True,
                 2, 1)
    served.update({"https://x/g.txt.gz": b"gz", "https://x/h.txt": b"0 1\n"})
    (tmp_path / "snap").mkdir()
    (tmp_path / "snap" / "h.txt").write_text("kept")
    fetch.download(ds, tmp_path)
    assert (tmp_path / "snap" / "g.txt.gz").read_bytes() == b"gz"
    assert (tmp_path / "snap" / "h.txt").read_text() == "kept" and made[0].asked == ["https://x/g.txt.gz"]


def test_a_suitesparse_archive_gives_its_mtx_member(tmp_path, serve):
    served, _ = serve
    url = "https://suitesparse-collection-website.herokuapp.com/MM/DIMACS10/coPapersDBLP.tar.gz"
    ds = Dataset("coPapersDBLP", ("suitesparse/coPapersDBLP.mtx",), (url,), "mtx", False, 2, 1)
    served[url] = _tar("coPapersDBLP/coPapersDBLP.mtx", b"%%MatrixMarket\n")
    fetch.download(ds, tmp_path)
    assert (tmp_path / "suitesparse" / "coPapersDBLP.mtx").read_bytes() == b"%%MatrixMarket\n"
    assert sorted(p.name for p in (tmp_path / "suitesparse").iterdir()) == ["coPapersDBLP.mtx"]  # archive removed
    served[url] = _tar("other/other.mtx", b"x")
    (tmp_path / "suitesparse" / "coPapersDBLP.mtx").unlink()
    with pytest.raises(OSError, match="coPapersDBLP.mtx not in coPapersDBLP.tar.gz"):
        fetch.download(ds, tmp_path)


def test_an_ogb_zip_is_unpacked_to_the_root(tmp_path, serve):
    served, _ = serve
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("products/raw/edge.csv.gz", b"e")
        z.writestr("products/split/sales_ranking/train.csv.gz", b"t")
    url = "https://snap.stanford.edu/ogb/data/nodeproppred/products.zip"
    served[url] = buf.getvalue()
    ds = Dataset("ogbn-products", ("ogb/ogbn_products/raw/edge.csv.gz",), (url,), "ogb", False, 2, 1,
                 root="ogb/ogbn_products", archive="zip")
    fetch.download(ds, tmp_path)
    assert (tmp_path / "ogb" / "ogbn_products" / "raw" / "edge.csv.gz").read_bytes() == b"e"
    assert sorted(p.name for p in (tmp_path / "ogb").iterdir()) == ["ogbn_products"]


def test_only_an_optional_file_may_fail(tmp_path, serve):
    served, _ = serve
    ds = Dataset("pubmed", ("planetoid/ind.pubmed.x", "planetoid/ind.pubmed.allx"),
                 ("https://x/ind.pubmed.x", "https://x/ind.pubmed.allx"), "planetoid", False, 2, 1)
    served["https://x/ind.pubmed.x"] = b"x"
    fetch.download(ds, tmp_path)
    assert sorted(p.name for p in (tmp_path / "planetoid").iterdir()) == ["ind.pubmed.x"]
    with pytest.raises(ConnectionError):
        fetch.download(Dataset("g", ("snap/g.txt",), ("https://x/g.txt",), "edgelist", True, 2, 1), tmp_path)


def test_reasons_are_short():
    class ConnectTimeout(OSError):
        pass

    assert fetch.reason(ConnectTimeout("long\nstory")) == "the network is unavailable"
    assert fetch.reason(ValueError("SHA256 hash of downloaded file does not match\nmore")) == \
        "ValueError: SHA256 hash of downloaded file does not match"


def test_which_urls_are_archives_of_the_file():
    assert fetch.member_of_tar("suitesparse/a.mtx", "https://h/MM/G/a.tar.gz")
    assert not fetch.member_of_tar("x/a.tar.gz", "https://h/a.tar.gz")
    assert not fetch.member_of_tar("snap/a.txt.gz", "https://h/a.txt.gz")
