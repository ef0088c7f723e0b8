"""Reading a path with the registered readers (pipeline/sources/readers.py): the format from --format or from
the path, the options checked before any task, everything brought to the client for tests."""

import numpy as np
import pytest
from helpers import datasets as fx
from helpers.reader_conformance import pairs

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.runtime.client import Tasks
from shgcn.pipeline.sources import readers
from shgcn.pipeline.sources.base import ReadOptions


def test_the_format_given_wins_over_the_name(tmp_path, client):
    p = tmp_path / "g.graph"  # a METIS name, but an edge list inside
    p.write_text("0 1\n1 2\n")
    assert pairs(readers.read(p, "edgelist", client)) == [(0, 1), (1, 2)]
    with pytest.raises(UserError, match=r"g.graph:1: declared size 0"):  # read as METIS: "0 1" is its header
        readers.read(p, None, client)


def test_an_unknown_name_and_an_unknown_format_name_the_known_ones(tmp_path, client):
    p = tmp_path / "g.unknown"
    p.write_text("1 2\n")
    with pytest.raises(UserError) as e:
        readers.read(p, None, client)
    assert str(e.value) == (f"{p}: unknown format; pass --format, one of edgelist, mtx, metis, npz, planetoid, ogb, "
                            "saint")
    with pytest.raises(UserError) as e:
        readers.read(p, "csv", client)
    assert str(e.value) == "unknown format 'csv'; known formats: edgelist, mtx, metis, npz, planetoid, ogb, saint"


def test_a_bad_header_option_is_refused_before_any_task(tmp_path, client):
    tasks = Tasks(client)
    with pytest.raises(UserError) as e:
        readers.submit_read(tasks, str(tmp_path / "never-read.txt"), None, ReadOptions(header="maybe"))
    assert str(e.value) == "--header 'maybe': choose from auto, yes, no"
    assert tasks._futures == {}


def test_gather_raw_brings_node_data_whole(tmp_path, client):
    raw = readers.read(fx.ogb_csv(tmp_path / "o"), None, client)
    assert raw.source == str(tmp_path / "o") and raw.n == fx.N and raw.node_ids.tolist() == list(range(fx.N))
    assert isinstance(raw.features, np.ndarray) and isinstance(raw.labels, np.ndarray)
    np.testing.assert_array_equal(raw.features, fx.FEATURES)
    assert raw.notes == ["OGB directory (csv layout), split random"]


def test_a_file_without_a_declared_size_keeps_its_labels(tmp_path, client):
    p = tmp_path / "g.txt"
    p.write_text("10 20\n20 30\n")
    raw = readers.read(p, None, client)
    assert raw.n is None and raw.node_ids is None and pairs(raw) == [(10, 20), (20, 30)]
