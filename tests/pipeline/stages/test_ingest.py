"""The ingest stage (pipeline/stages/ingest.py): relabelling, self loops and duplicates dropped, the row blocks
equal the in-memory reference graph."""

import weakref

import numpy as np

from shgcn.pipeline.sources.records import RawGraph
from shgcn.pipeline.stages.ingest import _shuffle, _transpose, relabel_raw, to_graph


def test_to_graph_dedupes_relabels_and_drops_self_loops():
    raw = RawGraph(src=np.array([10, 10, 30, 20, 20]), dst=np.array([20, 20, 30, 10, 30]), n=None, directed=True,
                   source="t", lines=5)
    g = to_graph(raw, directed=True)
    assert g.node_ids.tolist() == [10, 20, 30]
    assert g.adj.toarray().astype(int).tolist() == [[0, 1, 0], [1, 0, 1], [0, 0, 0]]
    assert g.stats["self_loops"] == 1 and g.stats["duplicates"] == 1
    gu = to_graph(raw, directed=False)
    assert gu.edges == 2 and (gu.adj != gu.adj.T).nnz == 0


def test_a_declared_size_keeps_every_id_isolated_ones_too():
    raw = RawGraph(src=np.array([0]), dst=np.array([2]), n=4, directed=None, source="t", lines=1,
                   node_ids=np.array([1, 2, 3, 4]))
    src, dst, ids = relabel_raw(raw)
    assert src.tolist() == [0] and dst.tolist() == [2] and ids.tolist() == [1, 2, 3, 4]
    assert to_graph(raw, directed=True).n == 4


def test_the_node_recipe_gives_the_same_rows_however_they_are_cut(fig2):
    # the layout makes each row block's node data, the write each chunk of the store's rows, from the same recipe
    from shgcn.pipeline import nodes

    ing = fig2.ing
    spec, plan, source, codes = ing.node_recipe
    codes = fig2.tasks.gather([codes])[0] if codes is not None else None
    n = int(ing.bounds[-1])
    whole = nodes.node_block(0, n, spec, plan, source, codes)
    for lo, hi in ((0, 2), (2, 3), (3, n)):
        part = nodes.node_block(lo, hi, spec, plan, source, codes)
        for name in ("features", "labels", "train", "val", "test"):
            assert getattr(part, name).tobytes() == getattr(whole, name)[lo:hi].tobytes()


class _Future:
    """A stand-in future: alive while someone holds it, as a distributed future keeps its data."""


class _Tasks:
    """Records every submitted task's stage and a weak reference to its future (never its arguments: a
    distributed client does not keep them either)."""

    def __init__(self):
        self.made: list[tuple[str, weakref.ref]] = []

    def submit(self, stage, fn, *args, **kwargs):
        f = _Future()
        self.made.append((stage, weakref.ref(f)))
        return f

    def gather(self, futures):
        return [0 for _ in futures]

    def alive(self, stage: str) -> int:
        return sum(1 for s, r in self.made if s == stage and r() is not None)


class _Monitor:
    """Counts, while the build waits for the blocks, the futures of each stage still held."""

    def __init__(self, tasks: _Tasks, stages: tuple[str, ...]):
        self.tasks, self.stages, self.seen = tasks, stages, {}

    def watch(self, futures):
        self.watched = getattr(self, "watched", 0) + len(futures)

    def bar(self, futures, what):
        self.seen[what] = {s: self.tasks.alive(s) for s in self.stages}


def test_while_the_blocks_are_made_the_client_holds_no_chunk_and_no_split():
    # held, the chunks (8 B an edge) and every split's pieces (8 B an entry) were the ingest's peak beside the blocks
    tasks = _Tasks()
    stages = ("chunk", "ingest-csr-split", "ingest-csr-upper-piece", "ingest-csr-upper", "ingest-csr-lower-split",
              "ingest-csr-piece", "ingest-csr")
    mon = _Monitor(tasks, stages)
    bounds = np.array([0, 2, 4, 6])
    a, _ = _shuffle(tasks, [tasks.submit("chunk", None) for _ in range(5)], bounds, False, mon)
    assert mon.seen["ingest: row blocks"] == {**dict.fromkeys(stages, 0), "ingest-csr": 3}
    assert len(a) == 3 and tasks.alive("ingest-csr") == 3
    assert sum(1 for s, _ in tasks.made if s == "ingest-csr-upper") == 3  # undirected: U first, then A = U + U^T
    tasks = _Tasks()
    mon = _Monitor(tasks, stages + ("ingest-csr-t-split", "ingest-csr-t-piece", "ingest-csr-t"))
    a, _ = _shuffle(tasks, [tasks.submit("chunk", None) for _ in range(5)], bounds, True, mon)
    assert not any(s == "ingest-csr-upper" for s, _ in tasks.made)  # directed: A's blocks at once
    at = _transpose(tasks, a, bounds, mon)  # A's blocks stay: they are the stage's output
    seen = mon.seen["ingest: row blocks of A^T"]
    assert {k: v for k, v in seen.items() if v} == {"ingest-csr": 3, "ingest-csr-t": 3} and len(at) == 3


class _Value(_Future):
    def __init__(self, value):
        self.value = value


class _EagerTasks(_Tasks):
    """Runs each task as it is submitted (its futures' values as arguments), and records the most futures of a
    stage alive at once."""

    def __init__(self):
        super().__init__()
        self.most: dict[str, int] = {}

    def submit(self, stage, fn, *args, **kwargs):
        f = _Value(fn(*(a.value if isinstance(a, _Value) else a for a in args), **kwargs))
        self.made.append((stage, weakref.ref(f)))
        self.most[stage] = max(self.most.get(stage, 0), self.alive(stage))
        return f


def test_the_vertex_ids_are_a_union_tree_submitted_depth_first():
    # every chunk's set of labels made before the first union held them all at once: at most fan a level now
    from shgcn.pipeline.sources.records import ParsedChunk
    from shgcn.pipeline.stages.ingest import _union_tree

    rng = np.random.default_rng(0)
    chunks = [_Value(ParsedChunk(rng.integers(0, 500, 40) * 3, rng.integers(0, 500, 40) * 3, 40)) for _ in range(30)]
    tasks = _EagerTasks()
    mon = _Monitor(tasks, ())
    root = _union_tree(tasks, chunks, mon, fan=3)
    want = np.unique(np.concatenate([np.concatenate([c.value.a, c.value.b]) for c in chunks]))
    assert root.value.tolist() == want.tolist()
    assert tasks.most["ingest-ids"] <= 3 * 4  # fan a level, 4 levels for 30 leaves: not 30
    assert list(mon.seen) == ["ingest: vertex ids of 30 chunks"] and mon.watched == 30  # each chunk's task counted
    for k in (0, 1, 2, 3, 8, 9):  # every shape of what is left at the end
        got = _union_tree(_EagerTasks(), chunks[:k], mon, fan=3).value
        assert got.tolist() == (np.unique(np.concatenate([np.concatenate([c.value.a, c.value.b])
                                                          for c in chunks[:k]])).tolist() if k else [])
