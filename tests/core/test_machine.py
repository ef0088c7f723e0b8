"""Machines: presets as data, spec strings, nodes and paths, collective times (core/machine.py), by hand."""

import json
from dataclasses import replace

import pytest
from helpers import REPO
from helpers.costs import machine

from shgcn.core.errors import UserError
from shgcn.core.machine import (
    MACHINES,
    Channel,
    ComputeModel,
    Machine,
    compute_path,
    load_compute,
    machine_from_json,
    machine_from_spec,
    machine_of,
    presets,
    this_compute,
)

PRESETS = ["hdr128", "infiniband", "paper", "shm", "this"]


def test_every_preset_loads_with_its_sources():
    ms = presets()
    assert list(ms) == PRESETS
    for name, m in ms.items():
        assert m.name == name and m.description and m.source
        assert m.intra.source and m.inter.source and m.compute.source, name
        assert m.ranks_per_node >= 1 and m.cores_per_node >= 1 and m.inter.alpha > 0 and m.inter.beta > 0


def test_a_registered_machine_is_a_preset_and_its_name_is_one_machines():
    mine = replace(presets()["this"], name="test-cluster", ranks_per_node=4)
    MACHINES.register(mine)
    try:
        assert machine_of("test-cluster") is mine and list(presets()) == [*PRESETS, "test-cluster"]
        with pytest.raises(ValueError, match="--machine 'test-cluster' is registered already"):
            MACHINES.register(mine)
    finally:
        MACHINES.unregister("test-cluster")
    with pytest.raises(UserError, match="unknown machine 'test-cluster'"):
        machine_of("test-cluster")


def test_the_presets_numbers():
    ms = presets()
    paper = ms["paper"]
    assert (paper.ranks_per_node, paper.cores_per_node, paper.link_rate) == (48, 48, 12.3e9)
    # issue 53: osu_latency and osu_mbw_mr (one pair, 56 pairs) on a 100 Gb/s Cascade Lake cluster, cited in the file
    assert (paper.inter.alpha, paper.inter.beta, paper.intra.alpha) == (9.8e-7, 8.114e-11, 4e-7)
    assert paper.contention == "fluid" and ms["hdr128"].contention == "fluid"
    assert paper.message_rate == pytest.approx(32.37e6, rel=1e-3) and ms["hdr128"].message_rate is None
    assert ms["this"].contention == "fluid"  # no link: the default, which nothing reads
    # issue 53: Azure HBv3's published 1.2 us and 192 Gb/s one-way (HDR), Aion's osu_bw across sockets
    assert ms["hdr128"].link_rate == 24e9 and ms["hdr128"].ranks_per_node == 128
    assert (ms["hdr128"].inter.alpha, ms["hdr128"].inter.beta, ms["hdr128"].intra.beta) == (1.2e-6, 4.167e-11,
                                                                                           8.182e-11)
    # the pre-node preset: CSD3 cclake's osu_latency and osu_mbw_mr, as the paper preset's inter-node path
    assert (ms["infiniband"].inter.alpha, ms["infiniband"].inter.beta, ms["infiniband"].link_rate) == (
        9.8e-7, 8.114e-11, 12.3e9)
    assert ms["this"].link_rate is None and ms["shm"].link_rate is None
    assert (ms["this"].ranks_per_node, ms["this"].cores_per_node) == (4096, 2)
    this = load_compute("this")
    assert ms["infiniband"].compute == this and ms["this"].compute == this  # "compute": "this"
    scaled = ms["hdr128"].compute  # {"scale_of": "this", "factor": 1.0}
    assert (scaled.spmm, scaled.dense, scaled.elem, scaled.const) == (this.spmm, this.dense, this.elem, this.const)
    assert scaled.source.startswith(this.source + ", times 1.0: ")


def test_load_compute_reads_its_file():
    d = json.loads((REPO / "core" / "machines" / "compute-this.json").read_text())
    assert load_compute("this") == ComputeModel(d["spmm"], d["dense"], d["elem"], d["const"], d["source"])
    assert this_compute() == load_compute() == load_compute("this")
    assert compute_path() == REPO / "core" / "machines" / "compute-this.json"
    with pytest.raises(UserError, match=r"^no fitted compute model 'vax' \(.*compute-vax.json\); known: this$"):
        load_compute("vax")


def test_compute_scaled_and_to_json():
    c = ComputeModel(1.0, 2.0, 3.0, 4.0, "fit")
    assert c.scaled(0.5, "half") == ComputeModel(0.5, 1.0, 1.5, 2.0, "half")
    assert c.to_json() == {"spmm": 1.0, "dense": 2.0, "elem": 3.0, "const": 4.0, "source": "fit"}


def test_machine_of_a_name_a_file_a_spec_or_itself(tmp_path):
    assert machine_of("paper") == presets()["paper"]
    m = machine()
    assert machine_of(m) is m
    d = {"name": "lab", "ranks_per_node": 4, "cores_per_node": 8, "intra": {"alpha": 1e-6, "beta": 1e-10},
         "inter": {"alpha": 2e-6, "beta": 2e-10, "source": "osu"}, "link": {"rate": 5e9},
         "compute": {"spmm": 1.0, "dense": 2.0, "elem": 3.0, "const": 4.0}}
    f = tmp_path / "lab.json"
    f.write_text(json.dumps(d))
    lab = machine_of(str(f))
    assert lab == Machine("lab", 4, Channel(1e-6, 1e-10), Channel(2e-6, 2e-10, "osu"), 5e9, 8,
                          ComputeModel(1.0, 2.0, 3.0, 4.0))
    assert machine_from_json({**d, "link": None}).link_rate is None
    assert machine_from_json({**d, "oversubscribed_sync": {"seconds": 2e-5}}).oversubscribed_sync == 2e-5
    assert machine_of("ranks=8").oversubscribed_sync == machine_of("this").oversubscribed_sync  # over `this`
    assert machine_of("ranks=8,sync=20us").oversubscribed_sync == pytest.approx(2e-5)
    spec = machine_of("ranks=8,cores=16")
    assert (spec.name, spec.ranks_per_node, spec.cores_per_node) == ("custom", 8, 16)


def test_machine_of_refuses_what_it_cannot_read(tmp_path):
    with pytest.raises(UserError, match=r"^unknown machine 'vax'; choose one of hdr128, infiniband, paper, shm, this, "):
        machine_of("vax")
    with pytest.raises(UserError, match="cannot read the machine file"):
        machine_of(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "half", "ranks_per_node": 4}')
    with pytest.raises(UserError) as e:
        machine_of(str(bad))
    assert str(e.value) == f"--machine {bad}: not a machine description (KeyError: 'intra')"
    bad.write_text("{not json")
    with pytest.raises(UserError, match="cannot read the machine file"):
        machine_of(str(bad))


def test_a_spec_string_over_a_base():
    this = load_compute("this")
    m = machine_from_spec("ranks=48,intra=0.4us:10GB/s,inter=1.5us:100Gb/s,link=12.5GB/s,cores=24,compute=this*2,"
                          "name=mine")
    assert (m.name, m.ranks_per_node, m.cores_per_node) == ("mine", 48, 24)
    assert m.intra.alpha == pytest.approx(0.4e-6) and m.intra.beta == pytest.approx(1 / 10e9)
    assert m.inter.alpha == pytest.approx(1.5e-6) and m.inter.beta == pytest.approx(1 / 12.5e9)  # 100 Gb/s
    assert m.link_rate == pytest.approx(12.5e9) and m.intra.source == "given on the command line"
    assert m.compute.spmm == pytest.approx(2 * this.spmm) and m.compute.elem == pytest.approx(2 * this.elem)
    paper = presets()["paper"]
    over = machine_from_spec("cores=4,link=none", base=paper)
    assert over == replace(paper, name="custom", cores_per_node=4, link_rate=None,
                           source="spec 'cores=4,link=none' over the paper preset")
    assert machine_from_spec("", base=paper).inter == paper.inter


@pytest.mark.parametrize("rate, per_second", [("100Gb/s", 12.5e9), ("12GB/s", 12e9), ("1.5e3kB/s", 1.5e6),
                                              ("800 Mb/s", 1e8), ("3TB/s", 3e12), ("64B/s", 64.0)])
def test_rates(rate, per_second):
    m = machine_from_spec(f"link={rate}", base=machine())
    assert m.link_rate == pytest.approx(per_second)


@pytest.mark.parametrize("latency, seconds", [("1.5us", 1.5e-6), ("2ms", 2e-3), ("10ns", 1e-8), ("1 s", 1.0),
                                              ("3µs", 3e-6), ("2e-6s", 2e-6)])
def test_times(latency, seconds):
    assert machine_from_spec(f"inter={latency}:1GB/s", base=machine()).inter.alpha == pytest.approx(seconds)


@pytest.mark.parametrize("spec, fragment", [
    ("ranks", "'ranks' is not key=value"), ("speed=1", "unknown key 'speed'"),
    ("inter=1.5us", "'' is not a rate like 12GB/s"), ("inter=fast:12GB/s", "'fast' is not a time like 1.5us"),
    ("link=12GBps", "'12GBps' is not a rate"), ("ranks=0", "'ranks=0': must be a whole number from 1 to 1,048,576"),
    ("cores=-2", "'cores=-2': must be a whole number from 1 to 1,048,576"), ("compute=vax*2", "no fitted compute model 'vax'")])
def test_a_bad_spec_is_one_line(spec, fragment):
    with pytest.raises(UserError) as e:
        machine_from_spec(spec, base=machine())
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_nodes_and_node_size():
    paper = machine(ranks_per_node=48)
    assert [paper.nodes(p) for p in (1, 48, 49, 96, 97)] == [1, 1, 2, 2, 3]
    assert [paper.node_size(p) for p in (1, 10, 48, 100)] == [1, 10, 48, 48]
    assert machine(ranks_per_node=1).nodes(5) == 5
    assert paper.with_ranks_per_node(4).nodes(10) == 3 and paper.ranks_per_node == 48


def test_flat_path_crosses_the_network_once_the_job_spans_nodes():
    m = machine(ranks_per_node=4)
    assert m.flat_path(4) is m.intra and m.flat_path(5) is m.inter
    one = machine(ranks_per_node=1)
    assert one.flat_path(1) is one.intra and one.flat_path(2) is one.inter


def test_oversubscription():
    m = machine(ranks_per_node=4096, cores=2)
    assert [m.oversubscription(p) for p in (1, 2, 4, 6)] == [1.0, 1.0, 2.0, 3.0]
    assert m.oversubscription(4, threads=2) == 4.0 and m.oversubscription(1, threads=0) == 1.0
    nodes = machine(ranks_per_node=48, cores=48)
    assert nodes.oversubscription(480) == 1.0  # ten full nodes, each within its cores


def test_sync_delay_grows_with_oversubscription():
    m = replace(machine(ranks_per_node=4096, cores=2), oversubscribed_sync=1e-5)
    assert [m.sync_delay(p) for p in (1, 2, 4, 8)] == pytest.approx([0.0, 0.0, 2e-5, 4e-5])
    assert machine(ranks_per_node=4096, cores=2).sync_delay(8) == 0.0  # not measured: not modelled
    assert machine_of("this").oversubscribed_sync > 0  # measured here (benchmarks.training.pingpong)
    assert machine_of("paper").sync_delay(512) == 0.0  # 48 ranks on 48 cores a node


def test_threads_divide_each_terms_parallel_fraction():
    """Amdahl per term: (1 - f) + f / T of the one-thread coefficient, from any thread count back and forth."""
    c = ComputeModel(1.0, 2.0, 3.0, 4.0, "fit", parallel=(1.0, 0.5, 0.0, 0.25))
    two = c.threaded(2)
    assert (two.spmm, two.dense, two.elem, two.const, two.threads) == (0.5, 1.5, 3.0, 3.5, 2)
    assert two.threaded(4) == c.threaded(4) and two.threaded(1) == c
    assert c.to_json()["parallel"] == {"spmm": 1.0, "dense": 0.5, "elem": 0.0, "const": 0.25}
    assert "parallel" not in ComputeModel(1.0, 2.0, 3.0, 4.0).to_json()  # the assumed default is not written


def test_a_machine_with_threads_counts_them_against_its_cores():
    m = replace(machine(), cores_per_node=8, ranks_per_node=4)
    assert m.with_threads(1) is m and m.with_threads(2).compute == m.compute.threaded(2)
    assert m.with_threads(2).oversubscription(4) == 1.0  # 4 x 2 = the 8 cores
    assert m.with_threads(4).oversubscription(4) == 2.0 and m.with_threads(4).oversubscription(2) == 1.0
    assert m.oversubscription(4, threads=3) == 1.5
