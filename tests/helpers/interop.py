"""Stores for the export tests (PyG, DGL, DistDGL) and DGL where it loads."""

import pytest

from shgcn import store
from shgcn.pipeline.builder import build
from shgcn.pipeline.config import BuildConfig

SBM = "sbm:n=400,classes=4,degree=6,features=24,seed=3"
RMAT = "rmat:scale=8,edge_factor=6,seed=4"


def make(root, client, name, source, parts, **kw):
    """Build ``root/name`` (models rp, hp unless given) and open it."""
    out = root / name
    build(BuildConfig(source=str(source), out=str(out), parts=parts, models=kw.pop("models", ("rp", "hp")), **kw),
          client, echo=lambda *a: None)
    return store.open_store(out)


def import_dgl():
    """DGL, or a clean skip where it is absent or does not import (DGL 2.1's
    GraphBolt has no library for a newer torch and raises FileNotFoundError)."""
    try:
        import dgl
    except Exception as e:
        pytest.skip(f"DGL does not import here ({type(e).__name__}: {(str(e).splitlines() or [''])[0][:120]})")
    return dgl
