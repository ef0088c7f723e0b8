"""Running a model: timed, in this process or in a child process (see
:mod:`..runtime.child`), with the same result either way.

The child is ``python -m shgcn.pipeline.models.run DIR PARENT_PID``; the
inputs go through ``.npy`` files in DIR (a temporary directory under the
store's scratch area, so a killed build leaves nothing in /tmp).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..errors import UserError
from .base import Inputs, PartitionConfig, PartitionResult
from .registry import get

log = logging.getLogger(__name__)


def run(model: str, inputs: Inputs, cfg: PartitionConfig, tmp_root: str | None = None,
        child: bool | None = None) -> PartitionResult:
    """The ``partition-<model>`` task: partition the rows of Â, timed, in a
    child process when the model holds the GIL (``child`` overrides)."""
    p = get(model)
    t0 = time.perf_counter()
    peak = 0.0
    info: dict
    if cfg.parts == 1:
        part, info = np.zeros(inputs.n, np.int32), {}
    elif p.in_child(inputs, cfg) if child is None else child:
        part, info, peak = run_in_child(model, inputs, cfg, tmp_root)
    else:
        res = p.run(inputs, cfg)
        part, info = res.part, res.info
    seconds = time.perf_counter() - t0
    log.info("partition %s: %d parts in %.2f s", model, cfg.parts, seconds)
    return PartitionResult(model, np.asarray(part, np.int32), seconds, dict(info), peak)


def _save_csr(d: Path, name: str, m) -> None:
    np.save(d / f"{name}.indptr.npy", m.indptr)
    np.save(d / f"{name}.indices.npy", m.indices)
    np.save(d / f"{name}.data.npy", m.data)


def _load_csr(d: Path, name: str, n: int):
    import scipy.sparse as sp

    arrays = [np.load(d / f"{name}.{k}.npy", mmap_mode="r") for k in ("data", "indices", "indptr")]
    return sp.csr_matrix((np.asarray(arrays[0]), np.asarray(arrays[1]), np.asarray(arrays[2])), shape=(n, n))


def run_in_child(model: str, inputs: Inputs, cfg: PartitionConfig, tmp_root: str | None = None
                 ) -> tuple[np.ndarray, dict, float]:
    """``get(model).run`` in a fresh interpreter. Returns (part, info, the
    child's peak memory in MiB)."""
    from ..runtime.child import run_module

    if tmp_root:
        Path(tmp_root).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"shgcn-{model}-", dir=tmp_root) as tmp:
        d = Path(tmp)
        for name, m in (("a", inputs.a), ("graph", inputs.graph)):
            if m is not None:
                _save_csr(d, name, m)
        for name, part in inputs.starts.items():
            np.save(d / f"start.{name}.npy", part)
        if inputs.weights is not None:
            np.save(d / "weights.npy", inputs.weights)
        (d / "args.json").write_text(json.dumps({
            "model": model, "n": inputs.n, "cfg": dataclasses.asdict(cfg), "a": inputs.a is not None,
            "graph": inputs.graph is not None, "starts": sorted(inputs.starts), "seconds": inputs.seconds,
            "weights": inputs.weights is not None, "graph_file": inputs.graph_file}))
        run_module(__name__, d, f"{model}: the partitioner", cfg.memory_limit)
        out = np.load(d / "part.npy")
        info = json.loads((d / "info.json").read_text())
        return out, info, float(info.pop("_peak_rss_mib", 0.0))


def _child_main(tmp: str, parent: int) -> None:
    from shgcn.core.malloc import return_freed_memory

    from ..runtime.child import die_with_parent, user_error
    from ..runtime.monitor import peak_rss_mib

    die_with_parent(parent)
    return_freed_memory()
    tempfile.tempdir = tmp  # the model's own temporary files (shp's Mt-KaHyPar children) go to the build's area too
    d = Path(tmp)
    args = json.loads((d / "args.json").read_text())
    n = args["n"]
    inputs = Inputs(n, a=_load_csr(d, "a", n) if args["a"] else None,
                    graph=_load_csr(d, "graph", n) if args["graph"] else None,
                    starts={s: np.load(d / f"start.{s}.npy") for s in args["starts"]}, seconds=args["seconds"],
                    weights=np.load(d / "weights.npy") if args["weights"] else None, graph_file=args["graph_file"])
    try:
        res = get(args["model"]).run(inputs, PartitionConfig(**args["cfg"]))
    except UserError as e:
        user_error(d, str(e))
    info = dict(res.info)
    info["_peak_rss_mib"] = peak_rss_mib()
    np.save(d / "part.npy", np.asarray(res.part, np.int32))
    (d / "info.json").write_text(json.dumps(info))


if __name__ == "__main__":
    _child_main(sys.argv[1], int(sys.argv[2]))
