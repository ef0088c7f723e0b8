"""The stages of a build run one by one on the session's cluster: Figure 2's graph (6 vertices, a directed
variant too), ingested and normalized once per module."""

import pytest
from helpers.graphs import FIG2_EDGES

from shgcn.pipeline.config import BuildConfig
from shgcn.pipeline.runtime.client import Tasks
from shgcn.pipeline.runtime.monitor import Monitor
from shgcn.pipeline.stages.ingest import ingest_stage
from shgcn.pipeline.stages.normalize import normalize_stage


class Stages:
    """cfg, tasks, mon, ing, nrm of one small build; ``work``: its scratch directory."""

    def __init__(self, client, root, directed: bool, **options):
        src = root / "fig2.txt"
        src.write_text("".join(f"{a} {b}\n" for a, b in FIG2_EDGES))
        self.cfg = BuildConfig(source=str(src), out=str(root / "s.zarr"), parts=3, directed=directed,
                               features="random:4", labels="random:3", **options).resolved()
        self.tasks, self.mon, self.work = Tasks(client), Monitor(client, heartbeat=3600), str(root / "work")
        self.ing = ingest_stage(self.tasks, self.cfg, self.mon, None, self.work)
        self.nrm = normalize_stage(self.tasks, self.ing, self.mon)


@pytest.fixture(scope="module")
def fig2(client, tmp_path_factory):
    s = Stages(client, tmp_path_factory.mktemp("fig2"), directed=False, models=("rp", "gp"), block_nnz=4)
    yield s
    s.tasks.release()


@pytest.fixture(scope="module")
def fig2_directed(client, tmp_path_factory):
    s = Stages(client, tmp_path_factory.mktemp("fig2d"), directed=True, models=("rp",), block_nnz=4)
    yield s
    s.tasks.release()
