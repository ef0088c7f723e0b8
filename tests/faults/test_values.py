"""The fault suite, labels, roles, names and the Python API's arguments
(issue 33, cases 1, 5, 6, 8 and 9): class ids beyond int32 wrapped silently
(an OGB label 5e9 became -2^31), a class map with no entry built a store of
0 classes, a class count above the vertex count was accepted, role lists of
booleans, strings, nulls or nothing were taken, an ``--out`` name too long
for the filesystem was an OSError traceback, ``--dropout 1.0`` was reported
as ``--attn-dropout``, and ``build(A, parts='2')`` raised an internal
TypeError. Each is now one line naming the file, option or parameter, exit
code 2, nothing written."""

import gzip
import json

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import build_cli, one_line
from helpers.datasets import ogb_csv, saint
from hypothesis import given, settings
from hypothesis import strategies as st

from shgcn.pipeline import build
from shgcn.pipeline.api import _checked_arguments
from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources.nodefiles import MAX_CLASS, class_ids
from shgcn.pipeline.sources.peers import labels_of


def _nothing_but(tmp_path, *names):
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


def test_an_ogb_label_beyond_int32_is_one_line(tmp_path):
    root = ogb_csv(tmp_path / "ds")
    (root / "raw" / "node-label.csv.gz").write_bytes(gzip.compress(b"0\n1\n5000000000\n0\n1\n2\nnan\n"))
    res = build_cli(str(root), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "s.zarr"))
    one_line(res, "node-label.csv.gz", "row 2", "5000000000", "not a class number")
    _nothing_but(tmp_path, "ds")


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
@pytest.mark.parametrize("cmap, message", [
    ({"0": 1, "1": 10**12}, "vertex 1: class 1000000000000 is not a class number"),
    ({}, "no vertex has a class"),
    ({"0": 0, "1": 100}, "101 classes for 7 vertices"),
])
def test_a_saint_class_map_that_cannot_train_is_one_line(tmp_path, cmap, message):
    root = saint(tmp_path / "ds")
    (root / "class_map.json").write_text(json.dumps(cmap))
    res = build_cli(str(root), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "s.zarr"))
    one_line(res, message)
    _nothing_but(tmp_path, "ds")


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_more_random_classes_than_vertices_is_one_line(tmp_path):
    res = build_cli("sbm:n=300,classes=3,degree=6,features=4,seed=0", "--labels", "random:1000000000000",
                    "--parts", "2", "--model", "rp", "--out", str(tmp_path / "s.zarr"))
    one_line(res, "--labels random:1000000000000", "1,000,000,000,000 classes for 300 vertices")
    _nothing_but(tmp_path)


@pytest.mark.parametrize("y, ok", [
    (np.array([0, 3, -1, np.nan]), [0, 3, -1, -1]),
    (np.array([MAX_CLASS], np.int64), [MAX_CLASS]),
    (np.array([MAX_CLASS + 1], np.int64), None),
    (np.array([5e9]), None),
    (np.array([1.5]), None),
    (np.array([1 + 2j]), None),
    (np.array([0, np.inf]), None),  # an OverflowError traceback before
    (np.array([-np.inf]), None),
])
def test_class_ids_are_whole_numbers_that_fit_int32(y, ok):
    if ok is None:
        with pytest.raises(UserError, match="labels"):
            class_ids(y, "labels")
    else:
        assert class_ids(y, "labels").tolist() == ok
    if ok is None and y.dtype.kind != "c":
        with pytest.raises(UserError, match="not a class number"):
            labels_of(y)  # the Python API's labels= too


@pytest.mark.parametrize("kwargs, message", [
    ({"parts": "2"}, "build(): parts='2'"),
    ({"parts": 0}, "build(): parts=0"),
    ({"parts": True}, "build(): parts=True"),
    ({"models": "zz"}, "build(): models: unknown model 'zz'"),
    ({"models": [1]}, "build(): models=[1]"),
    ({"overwrite": "yes"}, "build(): overwrite='yes'"),
    ({"out": None}, "build(): out=None"),
])
def test_the_api_names_its_own_parameters(tmp_path, kwargs, message):
    args = {"parts": 2, "out": str(tmp_path / "s.zarr"), **kwargs}
    with pytest.raises(UserError) as e:
        build(sp.eye(4, format="csr"), **args)
    assert str(e.value).startswith(message), str(e.value)
    _nothing_but(tmp_path)


def test_one_model_name_is_one_model_not_its_letters():
    assert _checked_arguments(2, "s.zarr", "rp", False) == ("rp",)
    assert _checked_arguments(2, "s.zarr", "gp,hp", False) == ("gp", "hp")
    assert _checked_arguments(np.int64(2), "s.zarr", ("all",), False) == ("rp", "gp", "hp", "shp")


@pytest.mark.parametrize("roles, message", [
    ({"tr": [], "va": [3], "te": [4]}, "the 'tr' list holds no vertex"),
    ({"tr": [True, False], "va": [3], "te": [4]}, "got true/false values"),
    ({"tr": ["a", "b"], "va": [3], "te": [4]}, "values that are not numbers"),
    ({"tr": [[0], [1, 2]], "va": [3], "te": [4]}, "expected a flat list of vertex ids"),
    ({"tr": [0, 1], "va": None, "te": [4]}, "got a single value or null"),
    ({"tr": [0, 1], "va": [{"a": 1}], "te": [4]}, "values that are not numbers"),
])
def test_role_lists_that_are_not_vertex_ids_are_refused(tmp_path, roles, message):
    from shgcn.pipeline.sources.saint import roles as read_roles

    (tmp_path / "role.json").write_text(json.dumps(roles))
    with pytest.raises(UserError, match=message):
        read_roles(str(tmp_path / "role.json"), 7)


def test_dropout_one_is_named_as_dropout():
    from shgcn.trainer.config import TrainConfig, TrainError

    with pytest.raises(TrainError, match=r"^--dropout 1.0: must be in \[0, 1\)"):
        TrainConfig(store="s", arch="gat", dropout=1.0).check()
    with pytest.raises(TrainError, match=r"^--attn-dropout 1.0"):
        TrainConfig(store="s", arch="gat", options={"attn_dropout": 1.0}).check()


@pytest.mark.parametrize("out, message", [("x" * 200 + ".zarr", "the store's name is 205 bytes long"),
                                          ("/".join(["d" * 100] * 40), "the store's path is")])
def test_an_out_path_too_long_for_the_filesystem_is_one_line(tmp_path, out, message):
    res = build_cli("sbm:n=50,classes=2,degree=4,seed=0", "--parts", "2", "--model", "rp", "--out", out,
                    cwd=tmp_path)
    one_line(res, "--out", message)
    _nothing_but(tmp_path)


def test_an_export_into_a_store_is_refused(tmp_path):
    # case 11: `pipeline export graph` into a store added a foreign file, and `build --overwrite` then refused
    from pathlib import Path

    from shgcn.pipeline.exports.assignment import check_out

    root = tmp_path / "s.zarr"
    root.mkdir()
    (root / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group",
                                                "attributes": {"schema_version": 1}}))
    for out in (root / "g.metis", root / "sub" / "g.metis"):
        out.parent.mkdir(exist_ok=True)
        with pytest.raises(UserError, match=f"inside the store {root}"):
            check_out(Path(out), overwrite=False, directory=False)
    check_out(tmp_path / "g.metis", overwrite=False, directory=False)  # beside it is fine


def test_a_fifo_as_the_graph_is_refused_not_waited_on(tmp_path):
    # case 2: ingest waited forever on a FIFO ("0 of 0 tasks done"), and a kill left the lock and partial store
    import os

    fifo = tmp_path / "g.txt"
    os.mkfifo(fifo)
    res = build_cli(str(fifo), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "s.zarr"), timeout=120)
    one_line(res, str(fifo), "is a FIFO or pipe", "not a regular file")
    _nothing_but(tmp_path, "g.txt")


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_a_class_map_linked_to_an_endless_device_is_refused(tmp_path):
    # case 2: a class_map.json linked to /dev/zero grew a buffer until killed
    root = saint(tmp_path / "ds")
    (root / "class_map.json").unlink()
    (root / "class_map.json").symlink_to("/dev/zero")
    res = build_cli(str(root), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "s.zarr"), timeout=120)
    one_line(res, "class_map.json", "is a character device")
    _nothing_but(tmp_path, "ds")


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_an_ogb_file_named_gz_that_is_not_gzip_is_refused(tmp_path):
    # case 6: a plain-text edge.csv.gz was read as text
    for name, text in (("edge.csv.gz", "0,1\n1,2\n"), ("node-label.csv.gz", "0\n1\n2\n0\n1\n2\nnan\n")):
        root = ogb_csv(tmp_path / name)
        (root / "raw" / name).write_text(text)
        res = build_cli(str(root), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "s.zarr"))
        one_line(res, name, "named .gz but not gzip-compressed")
    _nothing_but(tmp_path, "edge.csv.gz", "node-label.csv.gz")


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_a_dangling_ogb_feature_link_is_refused_not_replaced_by_random_features(tmp_path):
    # case 6: a dangling raw/node-feat.csv.gz silently meant "generate random features"
    root = ogb_csv(tmp_path / "ds")
    (root / "raw" / "node-feat.csv.gz").unlink()
    (root / "raw" / "node-feat.csv.gz").symlink_to(tmp_path / "gone.csv.gz")
    res = build_cli(str(root), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "s.zarr"))
    one_line(res, "node-feat.csv.gz", "which does not exist")
    _nothing_but(tmp_path, "ds")


@pytest.mark.parametrize("code, words", [(28, "the disk is full"), (30, "a read-only filesystem"),
                                         (36, "too long for the filesystem")])
def test_a_full_disk_is_one_line_and_exit_2(monkeypatch, capsys, code, words):
    # case 4: a build on a full filesystem ended with zarr's OSError traceback, exit 1
    import os

    from shgcn.pipeline import cli, commands

    def full(args):
        raise OSError(code, os.strerror(code), "/data/s.zarr/c/0/0")

    monkeypatch.setitem(commands.COMMANDS, "build", full)
    assert cli.main(["build", "sbm:n=50", "--parts", "2", "--out", "/data/s.zarr"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pipeline: error: /data/s.zarr/c/0/0: ") and words in err[0], err
    monkeypatch.setitem(commands.COMMANDS, "build", lambda args: (_ for _ in ()).throw(OSError(code, "zarr's")))
    assert cli.main(["build", "sbm:n=50", "--parts", "2", "--out", "/data/s.zarr"]) == 2  # no file name: --out's
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pipeline: error: --out /data/s.zarr: zarr's (") and words in err[0]
    monkeypatch.setitem(commands.COMMANDS, "build", lambda args: (_ for _ in ()).throw(OSError(5, "I/O error")))
    with pytest.raises(OSError):  # other OS errors are not the user's: they stay tracebacks
        cli.main(["build", "sbm:n=50", "--parts", "2", "--out", "/data/s.zarr"])


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_fractional_edge_ids_and_complex_features_are_refused(tmp_path):
    # case 1: OGB npz edge_index 0.5 and GraphSAINT indices + 0.5 were truncated; complex features lost their
    # imaginary part with only numpy's ComplexWarning
    from helpers.datasets import ogb_npz

    root = ogb_npz(tmp_path / "npz")
    with np.load(root / "raw" / "data.npz") as z:
        arrays = dict(z)
    arrays["edge_index"] = arrays["edge_index"].astype(np.float64)
    arrays["edge_index"][1, 2] = 0.5
    np.savez_compressed(root / "raw" / "data.npz", **arrays)
    res = build_cli(str(root), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "a.zarr"))
    one_line(res, "data.npz", "edge 2 has the id 0.5, not a whole number")

    root = saint(tmp_path / "saint")
    m = sp.load_npz(root / "adj_full.npz")
    np.savez(root / "adj_full.npz", data=m.data, indices=m.indices.astype(np.float64) + 0.5, indptr=m.indptr,
             format=b"csr", shape=np.array(m.shape))
    res = build_cli(str(root), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "b.zarr"))
    one_line(res, "adj_full.npz", "is not a whole number")

    root = saint(tmp_path / "complex")
    np.save(root / "feats.npy", np.load(root / "feats.npy").astype(np.complex64) * (1 + 1j))
    res = build_cli(str(root), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "c.zarr"))
    one_line(res, "complex64", "must be real numbers")
    _nothing_but(tmp_path, "npz", "saint", "complex")


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True) |
                           st.text(max_size=3), lambda inner: st.lists(inner, max_size=4) |
                           st.dictionaries(st.text(max_size=2), inner, max_size=3), max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(-2**65, 2**65), st.floats(allow_nan=True, allow_infinity=True)), max_size=20))
def test_class_ids_never_wrap(values):
    y = np.array(values, dtype=object).astype(np.float64) if values else np.zeros(0)
    try:
        out = class_ids(y, "labels")
    except UserError as e:
        assert str(e).startswith("labels:")
        return
    known = np.isfinite(y) & (y >= 0)
    assert out.dtype == np.int32 and np.array_equal(out[known], y[known]) and (out[~known] == -1).all()


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["tr", "va", "te", "x"]), JSON_VALUES, max_size=4))
def test_role_files_give_masks_or_one_user_error(tmp_path_factory, roles):
    from shgcn.pipeline.sources.saint import roles as read_roles

    path = tmp_path_factory.mktemp("roles") / "role.json"
    path.write_text(json.dumps(roles))
    try:
        masks = read_roles(str(path), 7)
    except UserError as e:
        assert str(e).startswith(str(path)) and "\n" not in str(e)
        return
    assert set(masks) == {"train", "val", "test"} and masks["train"].any()
    assert all(m.dtype == bool and m.shape == (7,) for m in masks.values())
