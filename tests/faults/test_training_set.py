"""An empty training set refused at build for every reader (issue 51.2): wherever the split comes from (a
dataset's own files, the API's masks, a random split of a graph without one), a build with no labelled
training vertex ends in one line naming the file the training set came from, exit 2, and nothing left behind;
the readers' own earlier lines (an empty OGB split, an empty GraphSAINT ``tr``) still come first. Every
family's inputs are tiny and written by hand."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import build_cli, one_line
from helpers import datasets as fx
from helpers.faults import planetoid

from shgcn.pipeline import nodes
from shgcn.pipeline.errors import UserError

NOTHING = "nothing to train on"


def _unlabelled_train(tmp_path):
    """GraphSAINT: a 'tr' list whose one vertex has no class-map entry."""
    root = fx.saint(tmp_path / "ds")
    (root / "role.json").write_text(json.dumps({"tr": [6], "va": [3], "te": [4, 5]}))
    return str(root), f"{root / 'role.json'}: none of the 1 training vertices has a label: {NOTHING}"


def _empty_tr(tmp_path):
    root = fx.saint(tmp_path / "ds")
    (root / "role.json").write_text(json.dumps({"tr": [], "va": [3], "te": [4, 5]}))
    return str(root), f"{root / 'role.json'}: the 'tr' list holds no vertex: {NOTHING}"


def _planetoid_no_y(tmp_path):
    """Planetoid: the training vertices are the rows of ind.NAME.y; none."""
    (tmp_path / "ds").mkdir()
    g = planetoid(tmp_path / "ds", y=np.zeros((0, 3), np.float32))
    return str(g), f"{tmp_path / 'ds' / 'ind.t'}.y: the training split holds no vertex: {NOTHING}"


def _planetoid_unlabelled(tmp_path):
    """Planetoid: two training vertices, whose ally rows are all zeros (no class)."""
    (tmp_path / "ds").mkdir()
    eye = np.eye(3, dtype=np.float32)
    g = planetoid(tmp_path / "ds", ally=np.r_[np.zeros((2, 3), np.float32), eye[[2, 0]]])
    return str(g), f"{tmp_path / 'ds' / 'ind.t'}.y: none of the 2 training vertices has a label: {NOTHING}"


def _ogb_npz_empty_split(tmp_path):
    d = fx.ogb_npz(tmp_path / "ds")
    train = d / "split" / "random" / "train.csv.gz"
    train.write_bytes(__import__("gzip").compress(b""))
    return str(d), f"{train}: an empty training split (no vertex ids): {NOTHING}"


def _npz_tiny_split(tmp_path):
    """A scipy .npz (no node data: a random split) whose train fraction is no vertex."""
    a, b = np.array(fx.EDGES).T
    p = tmp_path / "g.npz"
    sp.save_npz(p, sp.coo_matrix((np.ones(a.size), (a, b)), shape=(fx.N, fx.N)).tocsr())
    return (str(p), "--split", "0.01,0.5,0.4"), "--split 0.01,0.5,0.4: a train fraction of 0.01 of the 7 vertices"


def _generator_labels_tiny_split(tmp_path):
    return (("sbm:n=40,classes=2,degree=4,seed=1", "--labels", "random:2", "--split", "0.01,0.5,0.4"),
            "--split 0.01,0.5,0.4: a train fraction of 0.01 of the 40 vertices")


CASES = {"saint-unlabelled": _unlabelled_train, "saint-empty-tr": _empty_tr, "planetoid-no-y": _planetoid_no_y,
         "planetoid-unlabelled": _planetoid_unlabelled, "ogb-npz-empty-split": _ogb_npz_empty_split,
         "npz-random-split": _npz_tiny_split, "generator-labels": _generator_labels_tiny_split}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_reader_refuses_a_build_with_nothing_to_train_on(tmp_path, case):
    source, line = CASES[case](tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    args = source if isinstance(source, tuple) else (source,)
    res = build_cli(*args, "--parts", "2", "--model", "rp", "--out", str(tmp_path / "s.zarr"))
    one_line(res, line)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no store, no partial, no lock


def _graph():
    a, b = np.array(fx.EDGES).T
    return sp.coo_matrix((np.ones(2 * a.size), (np.r_[a, b], np.r_[b, a])), shape=(fx.N, fx.N))


def test_the_apis_masks_with_no_labelled_training_vertex_are_refused(tmp_path, client):
    import shgcn.pipeline as pl

    kw = dict(parts=2, models=("rp",), client=client, features=fx.FEATURES, labels=fx.LABELS)
    m = fx.masks()
    with pytest.raises(UserError) as e:
        pl.build(_graph(), out=tmp_path / "a.zarr", masks={**m, "train": np.zeros(fx.N, bool)}, **kw)
    assert str(e.value) == f"masks['train']: the training split holds no vertex: {NOTHING}"
    only6 = np.arange(fx.N) == 6  # vertex 6 is unlabelled
    with pytest.raises(UserError) as e:
        pl.build(_graph(), out=tmp_path / "b.zarr", masks={**m, "train": only6}, **kw)
    assert str(e.value) == f"masks['train']: none of the 1 training vertices has a label: {NOTHING}"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_random_split_that_draws_only_unlabelled_vertices_is_refused(tmp_path, client):
    """Labels without masks: the seeded split's training vertices all lack a label."""
    import shgcn.pipeline as pl

    codes = nodes.split_codes(fx.N, (0.6, 0.2, 0.2), 0)
    y = np.full(fx.N, -1, np.int32)
    y[np.flatnonzero(codes != 1)[:2]] = [0, 1]  # two labelled vertices, neither in the training set
    with pytest.raises(UserError) as e:
        pl.build(_graph(), out=tmp_path / "a.zarr", parts=2, models=("rp",), client=client, features=fx.FEATURES,
                 labels=y)
    assert str(e.value) == (f"in-memory graph: none of the {int((codes == 1).sum())} training vertices of the random "
                            f"split (split=(0.6, 0.2, 0.2)) has a label: {NOTHING}")


def test_multi_label_rows_of_zeros_are_trained_on(tmp_path, client):
    """The trainer trains on every multi-label row (zeros: no class applies), so the build does too."""
    import shgcn.pipeline as pl

    y = np.zeros((fx.N, 3), bool)
    y[6, 1] = True  # not a training vertex
    res = pl.build(_graph(), out=tmp_path / "a.zarr", parts=2, models=("rp",), client=client, features=fx.FEATURES,
                   labels=y, masks=fx.masks())
    assert res.attrs["n"] == fx.N


def test_check_trainable_names_the_roles_file_else_the_graph():
    spec = nodes.NodeSpec()
    source = nodes.NodePlan(3, 2, "source", "source", "source")
    random = nodes.NodePlan(3, 2, "source", "source", "random")
    nodes.check_trainable([(None, 0, 0), (None, 2, 1)], spec, source, "g", "r.json")  # one labelled: enough
    with pytest.raises(UserError, match=r"^r.json: the training split holds no vertex: nothing to train on$"):
        nodes.check_trainable([(None, 0, 0), (None, 0, 0)], spec, source, "g", "r.json")
    with pytest.raises(UserError, match=r"^g: none of the 3 training vertices has a label: nothing to train on$"):
        nodes.check_trainable([(None, 1, 0), (None, 2, 0)], spec, source, "g", None)
    with pytest.raises(UserError, match=r"^g: none of the 2 training vertices of the random split \(--split "
                                        r"0.6,0.2,0.2\) has a label"):
        nodes.check_trainable([(None, 2, 0)], spec, random, "g", "r.json")


def test_export_graph_writes_the_graph_of_a_source_that_cannot_train(tmp_path):
    """``export graph`` writes the graph for a partitioner: its training set is the build's concern."""
    from helpers import run_cli

    source, _ = _unlabelled_train(tmp_path)
    res = run_cli("export", "graph", source, str(tmp_path / "g.metis"), "--format", "metis")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "g.metis").read_text().startswith(f"{fx.N} ")
