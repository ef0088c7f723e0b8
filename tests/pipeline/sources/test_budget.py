"""The memory budget (pipeline/sources/budget.py): sizes in bytes, refusals as one line."""

import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import budget


def test_graph_bytes_counts_vertices_features_and_edges():
    assert budget.graph_bytes() == 0
    assert budget.graph_bytes(10, 100) == 10 * budget.BYTES_PER_VERTEX + 100 * budget.BYTES_PER_EDGE
    assert budget.graph_bytes(10, 0, 8) == 10 * (budget.BYTES_PER_VERTEX + 32)  # float32 features


def test_check_refuses_in_one_line_naming_the_file_and_line():
    budget.check(None, 10**18, "anything")  # no budget
    budget.check(100, 100, "exactly the limit")
    with pytest.raises(UserError) as e:
        budget.check(100, 101, "the graph", "g.txt", 3)
    assert str(e.value) == "g.txt:3: " + budget.too_big("the graph", 101, 100)
    with pytest.raises(UserError) as e:
        budget.check(100, 101, "the graph")
    assert str(e.value) == budget.too_big("the graph", 101, 100) and "\n" not in str(e.value)


def test_max_edges_and_the_sentence_of_a_refusal():
    assert budget.max_edges(None) is None
    assert budget.max_edges(10 * budget.BYTES_PER_EDGE + 5) == 10
    assert budget.max_edges(1) == 1  # at least one edge
    text = budget.edges_over(10, 1280, "decompressed, the file")
    assert text.startswith("decompressed, the file holds more than 10 edges, more than the memory limit of ")
    assert f"about {budget.BYTES_PER_EDGE} bytes per edge" in text
