"""Graphs read whole, in one task (pipeline/sources/whole.py): a one-chunk source of futures."""

import numpy as np

from shgcn.pipeline.runtime.client import Tasks
from shgcn.pipeline.sources.records import NodeSource, ParsedChunk
from shgcn.pipeline.sources.whole import Whole, submit_whole, whole_info


def _whole(with_nodes: bool) -> Whole:
    chunk = ParsedChunk(np.array([0, 2]), np.array([1, 0]), 2)
    nodes = NodeSource(np.ones((3, 2), np.float32)) if with_nodes else None
    return Whole(chunk, 3, False, 0, nodes, ["a note"])


def test_whole_info_is_what_the_client_learns():
    assert whole_info(_whole(True)) == (3, False, 2, ["a note"], True)
    assert whole_info(_whole(False))[-1] is False


def test_submit_whole_keeps_edges_and_node_data_on_the_workers(client):
    tasks = Tasks(client)
    try:
        raw = submit_whole(tasks, "ingest-read", "g", _whole, True)
        assert (raw.name, raw.n, raw.directed, raw.base, raw.lines, raw.notes) == ("g", 3, False, 0, 2, ["a note"])
        (chunk,) = tasks.gather(raw.chunks)
        assert chunk.a.tolist() == [0, 2] and chunk.b.tolist() == [1, 0]
        assert raw.nodes.result().features.shape == (3, 2)
        assert submit_whole(tasks, "ingest-read", "g", _whole, False).nodes is None  # no node data: no future
    finally:
        tasks.release()
