from dataclasses import replace

import numpy as np

from shgcn.pipeline.metrics.volume import partition_quality
from shgcn.pipeline.models import Inputs, PartitionConfig, default_options, get
from shgcn.pipeline.models.base import MATRIX
from shgcn.pipeline.models.gp import CHILD_NNZ, symmetric_pattern
from shgcn.pipeline.models.run import run
from shgcn.testing.partitioners import PartitionerTests


class TestGraphPartition(PartitionerTests):
    model = "gp"


def test_beats_random(sbm_graph):
    a, _ = sbm_graph
    cfg = PartitionConfig(parts=4, eps=0.05, seed=1, options=default_options())
    gp = partition_quality(a, run("gp", Inputs(a.shape[0], a), cfg).part, 4)
    rp = partition_quality(a, run("rp", Inputs(a.shape[0]), cfg).part, 4)
    assert gp.total_volume < 0.7 * rp.total_volume


def test_symmetric_pattern_has_no_diagonal_and_both_directions():
    import scipy.sparse as sp

    a = sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 1], [0, 0, 1]], np.float32))  # 0 -> 1 -> 2, with the diagonal
    xadj, adjncy = symmetric_pattern(a)
    assert xadj.tolist() == [0, 1, 3, 4] and adjncy.tolist() == [1, 0, 2, 1]


def test_kaminpar_runs_in_a_child_and_metis_only_when_large(sbm_graph):
    a, _ = sbm_graph
    metis = PartitionConfig(parts=2, options={**default_options(), "gp_backend": "metis"})
    assert not get("gp").in_child(Inputs(a.shape[0], a), metis) and a.nnz < CHILD_NNZ
    assert get("gp").in_child(Inputs(a.shape[0], a), PartitionConfig(parts=2, options=default_options()))
    assert get("gp").needs_for(metis) == {MATRIX}


class TestGraphPartitionMetis(PartitionerTests):
    model = "gp"
    options = {"gp_backend": "metis"}
    balance_slack = 0.05  # METIS' ufactor is a target, not a bound


def test_kaminpar_reads_the_file_the_workers_write(tmp_path, client):
    from helpers.stores import make

    from shgcn import store

    res = make(tmp_path / "k.zarr", client, models=("gp",))
    s = store.open_store(res.path)
    assert s.attrs["partitions"]["gp"]["backend"] == "kaminpar"
    assert not any(p.name == "graph.parhip" for p in tmp_path.rglob("*"))  # the scratch file went with the partial


def test_kaminpar_runs_before_numba_is_loaded(tmp_path):
    # the child's memory while KaMinPar holds its graph: numba (the rebalance's kernels, ~75 MiB) comes after
    import subprocess
    import sys

    code = ("import sys, numpy as np, scipy.sparse as sp\n"
            "from shgcn.pipeline.models.gp import kaminpar_partition, write_parhip\n"
            "a = sp.random(200, 200, density=0.05, format='csr', random_state=1)\n"
            f"write_parhip(a, np.ones(200, np.int64), {str(tmp_path / 'g.parhip')!r})\n"
            f"part = kaminpar_partition({str(tmp_path / 'g.parhip')!r}, 4, 0.03, 0)\n"
            "print(part.size, 'numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split() == ["200", "False"]


def test_kaminpar_eps_is_an_option_and_the_bound_still_holds(tmp_path):
    # KaMinPar partitions for --kaminpar-eps (coarser, leaner), the result is brought under --eps
    from helpers.graphs import random_a_hat

    from shgcn.pipeline.models.gp import KAMINPAR_EPS, kaminpar_balanced, write_parhip
    from shgcn.pipeline.models.rebalance import load_bound

    a = random_a_hat(400, 6.0, 3)
    w = np.random.default_rng(3).integers(1, 50, a.shape[0])
    path = str(tmp_path / "g.parhip")
    write_parhip(a, w, path)
    inputs = Inputs(a.shape[0], graph_file=path)
    opts = {**default_options(), KAMINPAR_EPS.dest: 0.2}
    part, info = kaminpar_balanced(inputs, PartitionConfig(8, eps=0.01, seed=1, threads=1, options=opts), "default")
    assert np.bincount(part, weights=w, minlength=8).max() <= load_bound(w, 8, 0.01) == info["lmax"]
    assert default_options()[KAMINPAR_EPS.dest] == 0.0  # the default: auto (kaminpar_eps)


def test_kaminpar_partitions_for_the_lean_eps_from_its_compressed_size_on():
    from shgcn.pipeline.models.gp import COMPRESS_EDGES, KAMINPAR_EPS, LEAN_EPS, kaminpar_eps

    build = PartitionConfig(8, eps=0.01, options=default_options())
    assert kaminpar_eps(COMPRESS_EDGES - 1, build) == 0.01  # small graphs: the build's eps, as before
    assert kaminpar_eps(COMPRESS_EDGES, build) == LEAN_EPS == 0.05
    loose = PartitionConfig(8, eps=0.2, options=default_options())
    assert kaminpar_eps(COMPRESS_EDGES, loose) == 0.2  # never tighter than the build's
    chosen = PartitionConfig(8, eps=0.01, options={**default_options(), KAMINPAR_EPS.dest: 0.01})
    assert kaminpar_eps(COMPRESS_EDGES, chosen) == 0.01  # the option wins at any size
    assert kaminpar_eps(COMPRESS_EDGES, build, auto=False) == 0.01  # hp's start: the build's eps at any size
    lean = PartitionConfig(8, eps=0.01, options={**default_options(), KAMINPAR_EPS.dest: 0.05})
    assert kaminpar_eps(0, lean, auto=False) == 0.05  # ... unless the option says otherwise


def _graph_file(tmp_path, n: int, degree: float, seed: int, heaviest: int):
    """A random Â of ``n`` rows, random vertex weights below ``heaviest`` and its ParHIP file (tmp_path/g.parhip)."""
    from helpers.graphs import random_a_hat

    from shgcn.pipeline.models import gp

    a = random_a_hat(n, degree, seed)
    w = np.random.default_rng(seed).integers(1, heaviest, a.shape[0])
    path = str(tmp_path / "g.parhip")
    gp.write_parhip(a, w, path)
    return a, w, path


def test_gp_records_the_eps_kaminpar_partitioned_for_and_keeps_the_bound(tmp_path, monkeypatch):
    """Past the threshold (lowered here to a small graph) gp's info says KaMinPar ran at 0.05, and the result
    is still under the build's bound; below it nothing is recorded."""
    from shgcn.pipeline.models import gp
    from shgcn.pipeline.models.rebalance import load_bound

    a, w, path = _graph_file(tmp_path, 400, 6.0, 3, 50)
    cfg = PartitionConfig(8, eps=0.01, seed=1, threads=1, options=default_options())
    small = gp.MODEL.run(Inputs(a.shape[0], graph_file=path), cfg)
    assert "kaminpar_eps" not in small.info and "kaminpar_eps" not in small.info["rebalance"]
    monkeypatch.setattr(gp, "COMPRESS_EDGES", gp.parhip_entries(path))
    lean = gp.MODEL.run(Inputs(a.shape[0], graph_file=path), replace(cfg, options={**cfg.options, "gp_levels": "0"}))
    assert lean.info["kaminpar_eps"] == 0.05 and "kaminpar_eps" not in lean.info["rebalance"]
    assert np.bincount(lean.part, weights=w, minlength=8).max() <= load_bound(w, 8, 0.01)
    hp = get("hp").run(Inputs(a.shape[0], a=a, graph_file=path, weights=w), cfg)  # hp's start keeps the build's eps
    start = hp.info["starts"]["kaminpar default"]["rebalance"]
    assert "lmax" in start and "kaminpar_eps" not in start


def test_the_plan_figures_of_each_backend():
    """METIS: a documented child (bytes a nonzero over the fitted base); KaMinPar: the fitted child, compressed
    from COMPRESS_EDGES entries where fitted apart, and leaner for a larger eps than the build's."""
    from dataclasses import replace

    from shgcn.pipeline.models.gp import COMPRESS_EDGES, KAMINPAR_EPS_SHARE, LEVELS_SHARE, METIS_BYTES_PER_NNZ
    from shgcn.pipeline.sources.counts import Counts

    gp = get("gp")
    small = Counts(n=10, nnz=100, edges=90, features=1, classes=2, directed=False, how="t")
    big = Counts(n=10, nnz=100, edges=90, features=1, classes=2, directed=False, how="t", symmetric=COMPRESS_EDGES)
    fitted = {"partition:gp", "child:gp", "child:gp-compressed"}
    metis = gp.figures(small, {"gp_backend": "metis"}, fitted)  # documented for gp's own; fitted for one like it
    assert (metis.documented.libraries, metis.documented.nnz_bytes) == ("METIS", METIS_BYTES_PER_NNZ)
    assert "64-bit idx_t" in metis.documented.graph_note
    assert gp.figures(small, {}, fitted) == gp.figures(small, {"gp_backend": "kaminpar"}, fitted)
    plain = gp.figures(small, {}, fitted)
    assert (plain.key, plain.libraries, plain.child, plain.child_share, plain.note) == ("gp", "KaMinPar", "", 1.0, "")
    assert plain.documented is None and metis == replace(plain, documented=metis.documented)
    leveled = gp.figures(big, {}, fitted)  # from 50M entries: our own levels first, by default
    assert (leveled.child, leveled.child_share, leveled.level_files) == ("gp-compressed", LEVELS_SHARE, 1.0)
    assert leveled.note.startswith("2 coarsening levels of our own")
    lean = gp.figures(big, {"gp_levels": "0"}, fitted)
    assert (lean.child, lean.child_share) == ("gp-compressed", KAMINPAR_EPS_SHARE) and "default from 50M" in lean.note
    assert lean.level_files == 0.0 and plain.level_files == 0.0
    assert gp.figures(big, {"gp_levels": "0"}, {"partition:gp", "child:gp"}).child == ""  # no compressed fit
    assert gp.figures(small, {"gp_levels": "1"}, fitted).child_share == LEVELS_SHARE  # chosen at any size
    assert gp.figures(big, {"gp_backend": "metis"}, fitted).level_files == 0.0  # METIS has no levels
    chosen = gp.figures(small, {"kaminpar_eps": 0.05}, fitted)
    assert chosen.child_share == KAMINPAR_EPS_SHARE and chosen.note.startswith("--kaminpar-eps")
    assert "--kaminpar-eps 0.05" in gp.advice(small, {}) and "fewer models" in gp.advice(big, {})
    assert get("gp-vb").advice(small, {}) == gp.advice(small, {})  # its child computes gp when the build has none


def test_gp_with_levels_of_our_own_is_deterministic_and_keeps_the_bound(tmp_path, monkeypatch):
    """Past the threshold (lowered here) gp coarsens twice itself before KaMinPar: the info names the levels,
    the files beside the graph file are gone, the result is under the build's bound and the same twice; the
    edge cut stays near KaMinPar's own on the graph (a random graph: within 10%)."""
    from shgcn.pipeline.graphfile import read_parhip
    from shgcn.pipeline.models import coarsen, gp
    from shgcn.pipeline.models.rebalance import load_bound

    a, w, path = _graph_file(tmp_path, 2000, 8.0, 5, 20)
    cfg = PartitionConfig(8, eps=0.01, seed=2, threads=1, options=default_options())
    plain = gp.MODEL.run(Inputs(a.shape[0], graph_file=path), cfg)
    monkeypatch.setattr(gp, "COMPRESS_EDGES", gp.parhip_entries(path))
    monkeypatch.setattr(coarsen, "CONTRACTION_LIMIT", 10)  # KaMinPar's 2000 a part: no level of 2,000 vertices
    runs = [gp.MODEL.run(Inputs(a.shape[0], graph_file=path), cfg) for _ in range(2)]
    assert np.array_equal(runs[0].part, runs[1].part)
    assert [{**r.info, "rebalance": {**r.info["rebalance"], "seconds": 0}} for r in runs[1:]] == \
        [{**runs[0].info, "rebalance": {**runs[0].info["rebalance"], "seconds": 0}}]
    levels = runs[0].info["levels"]
    assert len(levels) == 3 and levels[0] == [a.shape[0], gp.parhip_entries(path)] and levels[2][0] < levels[1][0]
    assert runs[0].info["refined"] >= 0 and sorted(p.name for p in tmp_path.iterdir()) == ["g.parhip"]
    assert np.bincount(runs[0].part, weights=w, minlength=8).max() <= load_bound(w, 8, 0.01)
    xadj, adjncy, _ = read_parhip(path)
    src = np.repeat(np.arange(a.shape[0]), np.diff(xadj))

    def cut(part):
        return int(np.count_nonzero(part[src] != part[np.asarray(adjncy)]))

    assert cut(runs[0].part) <= 1.1 * cut(plain.part)
