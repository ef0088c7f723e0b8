"""What flows through a reader (pipeline/sources/base.py): the options, the source of futures, the claims."""

from shgcn.pipeline.sources import budget, registry
from shgcn.pipeline.sources.base import HEADERS, RawSource, Reader, ReadOptions, Recognizes
from shgcn.pipeline.sources.chunks import ChunkMeta


def test_read_options_limit_is_the_budget_or_this_machine():
    assert ReadOptions(memory_limit=12345).limit == 12345
    assert ReadOptions().limit == budget.machine_memory()
    assert ReadOptions(memory_limit=12345, guard=False).limit is None  # the build's plan checked the limit
    assert ReadOptions().header in HEADERS == ("auto", "yes", "no")


def test_raw_source_lines_are_the_edges_of_its_chunks():
    metas = [ChunkMeta(10, 2, 7, None), ChunkMeta(4, 0, 4, None), ChunkMeta(1, 1, 0, None)]
    raw = RawSource("g", [None, None, None], metas, None)
    assert raw.lines == 11 and raw.base == 0 and raw.directed is None and raw.nodes is None and raw.notes == []


def test_claims_default_to_nothing():
    k = Recognizes()
    assert (k.suffixes, k.unless, k.files, k.folders, k.prefixes, k.loose) == ((),) * 6
    assert not k.directory and not k.bare


def test_every_registered_reader_follows_the_protocol():
    def check(r: Reader) -> None:  # what the protocol promises, used as the registry uses it
        assert isinstance(r.name, str) and isinstance(r.recognizes, Recognizes) and callable(r.submit)

    for r in registry.READERS.values():
        check(r)
