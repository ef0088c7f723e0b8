"""Building small stores in tests and comparing two stores byte for byte."""

from pathlib import Path

from shgcn import store
from shgcn.pipeline.builder import build
from shgcn.pipeline.config import BuildConfig

SBM = "sbm:n=900,classes=4,degree=8,features=6,seed=2"


def array_files(root: Path, skip=()) -> dict[str, bytes]:
    """Every file of a store but its root metadata (timings) and the
    partitioners' times; ``skip`` prefixes too."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and rel != "zarr.json" and not rel.startswith("quality/seconds") and \
                not any(rel.startswith(s) for s in skip):
            out[rel] = p.read_bytes()
    return out


def same_store(a: Path, b: Path, skip=()) -> None:
    fa, fb = array_files(a, skip), array_files(b, skip)
    assert fa.keys() == fb.keys() and len(fa) > 30
    assert [k for k in fa if fa[k] != fb[k]] == []
    sa, sb = store.open_store(a), store.open_store(b)
    assert sa.attrs["checksums"] == sb.attrs["checksums"]


def make(path, client, source=SBM, **kw):
    """Build a store at ``path`` on ``client`` (default: the SBM, models rp, gp, hp, 3 parts)."""
    kw.setdefault("models", ("rp", "gp", "hp"))
    cfg = BuildConfig(source=source, out=str(path), parts=kw.pop("parts", 3), **kw)
    return build(cfg, client, echo=lambda *a: None)


SMALL = "sbm:n=600,classes=4,degree=6,features=8,seed=1"


def make_in(root: Path, client, name: str = "s.zarr", source: str = SMALL, **kw):
    """:func:`make` at ``root/name``, of the small SBM by default."""
    return make(root / name, client, source=source, **kw)
