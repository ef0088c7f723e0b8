"""benchmarks/RESULTS.md: machine and version facts, and writing one named
section into the part of the question it answers.

The file is, in this order: the title and the index (a table: question,
section, the command that produces it, the date of its figures; rewritten on
every write), one part (``# heading``) per question holding the latest
figures of each of its sections (``## title``, each opening with the
command, date, machine and versions it was recorded with), and the appendix
of superseded runs. :func:`write_section` puts a section into the part of
its question (:data:`QUESTIONS`); the section it replaces moves, verbatim,
to the appendix."""

from __future__ import annotations

import datetime as _dt
import importlib.metadata as md
import os
import platform
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common.runs import REPO

RESULTS = REPO / "benchmarks" / "RESULTS.md"
TITLE = "Benchmark results"
INTRO = ("Written by the scripts in benchmarks/ (run from the repository root as `python -m "
         "benchmarks.<group>.<script>`); each section says how it was made. One part per question holds the latest "
         "figures of each of its sections; the runs they replaced are kept, verbatim, in the appendix.")
INDEX = "Index"
APPENDIX = "Appendix: superseded runs"


@dataclass(frozen=True)
class Question:
    """A part of RESULTS.md: its heading, the sections that answer it (in the order they are shown), and the
    benchmark modules whose other sections (a ``--title`` of their own) go into it too."""
    key: str
    heading: str
    titles: tuple[str, ...]
    modules: tuple[str, ...] = ()


_P, _B, _T = "benchmarks.partitioning.", "benchmarks.build.", "benchmarks.training."
QUESTIONS = (
    Question("quality", "Partition quality: how much communication does each model save?",
             ("Partition quality at the paper's scale: rp, gp, hp, gp-vb, hp-vb", "Partition quality: rp, gp, hp",
              "Notes: volume-balancing variants tried (issue 16)",
              "hp-vb against METIS and the receive bound (issue 31)",
              "hp-vb with message pricing (`--vb-messages`, issue 31)"),
             (_P + "vb_quality", _P + "quality_table", _P + "vb_targets")),
    Question("speed", "Partitioner speed: hypergraph quality in graph-partitioner time?",
             ("hp presets: quality against time (issue 31)", "Notes: hp's Mt-KaHyPar variants (issue 31)",
              "hp at graph-partitioner speed (issue 22)",
              "hp's start: KaMinPar presets before the connectivity refinement (issue 22)",
              "Partitioning: KaMinPar against METIS"),
             (_P + "hp_speed", _P + "hp_start")),
    Question("epochs", "Does a better partition make a faster epoch?",
             ("Predicted epochs against rp (issue 22)", "Epoch model at the paper's scale: predicted runtime ratio to rp",
              "The paper's Table 2 through the epoch model: soc-slashdot0902, P = 512 (issue 53)",
              "The epoch model's predictions over the cited constants (issue 53)"),
             (_P + "balance_sim", _T + "paper_table")),
    Question("shp", "Mini-batch partitioning: does shp beat gp and hp on held-out batches?",
             ("Mini-batch partitioning: shp vs gp and hp, every sampler",
              "Mini-batch partitioning: shp's refiners under a time budget that binds (issue 31)",
              "Mini-batch partitioning: batches needed to beat gp and hp",
              "Notes: shp variants tried on soc-slashdot0902, p = 64 (not adopted)"),
             ("benchmarks.minibatch_partitioning.shp_bench", "benchmarks.minibatch_partitioning.shp_batches")),
    Question("build", "Build: where do its time and memory go?",
             ("Build: wall time by stage and peak memory",
              "Build: soc-slashdot0902 p=16 --model all beside two CPU-bound processes",
              "Notes: Mt-KaHyPar and the GIL (why large hypergraphs go to a child process)"),
             (_B + "build_stages",)),
    Question("input", "Build input: how fast are the readers, and do dataset directories stream?",
             ("Build: ingest speed on one core", "Dataset directories at scale: OGB and GraphSAINT, streamed"),
             (_B + "dataset_dirs",)),
    Question("scale", "Build at scale: time, memory and the cluster's traffic on large graphs?",
             ("Partitioning at scale (issue 22)", "Partitioning at scale: memory at once, R-MAT scale 23 (issue 22)",
              "Build: bytes through the client and the scheduler (R-MAT)",
              "Build: R-MAT scale 22, gp, p=64, external cluster of 2 workers",
              "Build: R-MAT scale 20, hp, a worker killed mid-build",
              "Notes: R-MAT scale 22, gp, p=64 (did not complete)",
              "Build plan: predicted against measured peak memory (issue 32)",
              "KaMinPar's lean eps by default from 50M adjacency entries (issue 32)",
              "Build: `--memory-limit` binds the Dask workers and the partitioner's child (issue 32)",
              "Trainer at the build's scale: modelled memory against the measured peak (issue 32)",
              "Build: the write stage with few ranks, R-MAT scale 22, 2 parts (issue 32)",
              "Build plan refitted on the current build, checked at R-MAT scale 20 to 24 (issue 32, branch `plan2`)",
              "Build: hp at R-MAT scale 22, p = 64 (issue 32)",
              "KaMinPar's child: where its peak goes, and `--kaminpar-eps` (issue 32, branch `kmem`)",
              "Build: the layout's pieces in the temporary area, R-MAT scale 20 (issue 32)",
              "Trainer memory: a rank reads its memory-mapped block once (issue 32, branch `t24`)",
              "Build: R-MAT scale 23, gp, p = 64, at 32 bytes a nonzero (issue 32)",
              "Build: bytes a nonzero by stage, the input chunks freed early (issue 59)",
              "A billion nonzeros on one machine: R-MAT 26 built and trained out of core (issue 59)",
              "Notes: the partitioner's child with other PyPI partitioners, tried (issue 59)",
              "KaMinPar's child with coarsening levels of our own (issue 59)",
              "Build: R-MAT 22 to 26, gp, p = 64, every default, the ingest letting go (issue 59)"),
             (_P + "partition_scale", _B + "scale_build", _B + "plan_check", _B + "stage_bytes", _T + "scale_memory",
              _B + "billion", _B + "coarsen_first")),
    Question("trainer", "Trainer speed: how fast is an epoch at P = 1, 2 and 4, against a plain epoch and PyG?",
             ("Trainer at one process and P=2 (issue 23)", "Architectures against PyG on CPU (issue 23)",
              "Trainer: soc-slashdot0902, hidden 128",
              "Notes: issue 23, what was measured on the way (by hand, 2026-11-25)"),
             (_T + "arch_bench", _T + "trainer_bench")),
    Question("accuracy", "Accuracy: does training reach the published accuracy?",
             ("Accuracy per architecture against PyG, and bfloat16 (issue 23)", "Accuracy: Cora, Planetoid split"),
             (_T + "accuracy",)),
    Question("minibatch", "Mini-batch training: bytes per step, epoch time, and where a step's time goes?",
             ("Mini-batch training: measured bytes per step", "Mini-batch training: epoch time P=1 and P=2",
              "Mini-batch training: where a step's time goes",
              "Mini-batch training out of core: RssAnon per rank against the store's size (issue 59)"),
             (_T + "minibatch_bench", _T + "outofcore_minibatch")),
    Question("algorithms", "Communication-avoiding SpMM: when do 1.5D and 2D beat 1D?",
             ("Communication-avoiding SpMM at P = 4: bytes of 1D, 1.5D and 2D (issue 26)",
              "Predicted epochs per algorithm on soc-slashdot0902 (issue 26)",
              "Predicted epoch against k = P / c (issue 26)"),
             (_T + "algo_bench",)),
    Question("nodes", "Nodes: does node-aware training show and deliver the partitions' gain at scale?",
             ("Nodes at the paper's scale: soc-slashdot0902, P = 512 on the paper's machine (issue 30)",
              "Placement of parts on nodes (issue 30)",
              "Nodes on this machine: measured against predicted, P = 1 to 8 (issue 30)"),
             (_T + "node_bench",)),
    Question("model", "Epoch model: does the predicted epoch match the measured one on this machine?",
             ("Epoch model: fit and validation on this machine (P = 1, 2)",
              "Ping-pong: MPI latency and bandwidth on this machine",
              "Oversubscribed synchronization: 8 ranks on 2 cores",
              "The device run: the network calibration (issue 60)"),
             (_T + "simulate_bench", _T + "pingpong")),
    Question("threads", "Threads inside a rank: do T threads per rank speed up an epoch, and does the model know?",
             ("Threads inside a rank: P x T on soc-slashdot0902 (issue 34)",
              "Threads per kernel: T = 1..cores and P x T = cores (issue 52)",
              "Threads: the dense products on numba's threads against Python threads (issue 52)",
              "The device run: threads on the GPU machine's cores (issue 60)"),
             (_T + "thread_bench", _T + "threads_sweep", _T + "_thread_products")),
    Question("torch", "PyTorch: does a torch model on the store train what one process trains, at the predicted bytes?",
             ("PyTorch on the store: the torch backend and torchdist against one process (issue 35)",),
             (_T + "torch_bench",)),
    Question("gpu", "GPUs: does the trainer run at the GPU's speed, against PyG on the same card?",
             ("The device run: the trainer on one GPU against PyG (issue 60)",
              "The trainer on one GPU against PyG (issue 48)"), (_T + "gpu_bench",)),
    Question("interop", "Interop: does DGL's own loader read the DistDGL export?",
             ("DistDGL round trip with DGL's own loader",),
             ("benchmarks.interop.dgl_roundtrip",)),
)
OTHER = Question("other", "Other results", ())

# every benchmark module by its old flat name (benchmarks/NAME.py, as the commands recorded before the move
# name them): the index gives the command that produces a section today
MODULES = {m.rsplit(".", 1)[1]: m for m in (
    *(_P + n for n in ("quality_table", "vb_quality", "hp_speed", "hp_start", "balance_sim", "partition_scale",
                       "vb_targets")),
    *(_B + n for n in ("build_stages", "scale_build", "dataset_dirs", "compare_stores", "plan_check")),
    *(_T + n for n in ("trainer_bench", "arch_bench", "accuracy", "minibatch_bench", "algo_bench", "pingpong",
                       "simulate_bench", "node_bench", "torch_bench", "thread_bench", "threads_sweep", "_thread_products",
                       "scale_memory", "paper_table", "_phases",
                       "_pyg_epoch",
                       "_reference_epoch")),
    "benchmarks.minibatch_partitioning.shp_bench", "benchmarks.minibatch_partitioning.shp_batches",
    "benchmarks.interop.dgl_roundtrip")}
MODULES["_graphs"] = "benchmarks.common.graphs"
LAUNCHER = {_T + "pingpong": "mpirun -n 2 "}  # what the recorded command leaves out


def machine() -> str:
    mem = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    cpu = platform.processor() or platform.machine()
    return f"{os.cpu_count()} cores ({cpu}), {mem} memory, {platform.system()} {platform.release()}"


def versions(*pkgs: str) -> str:
    out = [f"python {platform.python_version()}"]
    for p in ("shgcn", "numpy", "scipy", "dask", "zarr", "pymetis", "mtkahypar", "mpi4py", "mpich", *pkgs):
        try:
            out.append(f"{p} {md.version(p)}")
        except md.PackageNotFoundError:
            pass
    return ", ".join(dict.fromkeys(out))


def running_module() -> str | None:
    """``benchmarks.<group>.<script>`` when this process runs as ``python -m`` it, else None."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) or None


def command(places: Mapping[str, str] | None = None) -> str:
    """This process's command line, as run from the repository root; ``places``: machine paths among its
    arguments (``/tmp/stores``) -> what RESULTS writes instead (``DIR``)."""
    module = running_module()
    prog = ["-m", module] if module else [os.path.relpath(sys.argv[0], REPO)]
    ranks = os.environ.get("PMI_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE")  # started by mpirun
    launcher = f"mpirun -n {ranks} " if ranks else ""
    args = [(places or {}).get(a, a) for a in sys.argv[1:]]
    return launcher + "python " + shlex.join([*prog, *args])


def header(title: str, places: Mapping[str, str] | None = None) -> str:
    return (f"## {title}\n\n- command: `{command(places)}`\n- date: {_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M} UTC\n"
            f"- machine: {machine()}\n- versions: {versions()}\n")


def table(rows: list[dict], cols: list[tuple[str, str]]) -> str:
    head = "| " + " | ".join(h for _, h in cols) + " |\n|" + "---|" * len(cols) + "\n"
    return head + "".join("| " + " | ".join(str(r.get(k, "")) for k, _ in cols) + " |\n" for r in rows)


def question_of(title: str, module: str | None = None) -> Question:
    """The question a section answers: by its title, else by the module that writes it, else :data:`OTHER`."""
    for q in QUESTIONS:
        if title in q.titles:
            return q
    for q in QUESTIONS:
        if module in q.modules:
            return q
    return OTHER


def write_section(title: str, body: str, places: Mapping[str, str] | None = None) -> None:
    """Write the section ``## title`` into the part of its question in RESULTS.md, in place of the section of
    that title (which moves, verbatim, to the appendix), or after the question's other sections. ``places``:
    machine paths (``/tmp/stores``) -> what the section writes instead, in its command and its body (``DIR``)."""
    doc = Document.parse(RESULTS.read_text()) if RESULTS.exists() else Document.new()
    for path, place in (places or {}).items():
        body = body.replace(path, place)
    section = header(title, places) + "\n" + body.rstrip() + "\n"
    doc.put(title, section, question_of(title, running_module()))
    RESULTS.write_text(doc.render())
    print(section)


# ------------------------------------------------------------------ the document

_FENCE = re.compile(r"^(```|~~~)")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2} UTC)?")
_NOTE = "*Superseded"  # how the appendix's note under a heading opens


@dataclass
class Section:
    """``## title`` and its lines (the heading line first), up to the next ``#`` or ``##`` heading."""
    title: str
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(_strip(self.lines))

    def field(self, name: str) -> str | None:
        m = re.search(rf"^- {name}: (.+)$", self.text, re.M)
        return m[1] if m else None

    @property
    def date(self) -> str:
        """The recorded date, else (hand-written notes) the first date in the text, else ''."""
        got = self.field("date")
        if got:
            return got
        m = _DATE.search("\n".join(x for x in self.lines if not x.startswith(_NOTE)))  # not the appendix's note
        return m[0] if m else ""

    @property
    def command(self) -> str | None:
        got = self.field("command")
        return got[1:-1] if got and got.startswith("`") and got.endswith("`") else got


@dataclass
class Part:
    """``# title``, the lines before its first section, and its sections."""
    title: str
    intro: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)


def _strip(lines: list[str]) -> list[str]:
    a, b = 0, len(lines)
    while a < b and not lines[a].strip():
        a += 1
    while b > a and not lines[b - 1].strip():
        b -= 1
    return lines[a:b]


def _headings(lines: list[str]):
    """(level, text) of the Markdown headings among ``lines``, outside fenced code."""
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := re.match(r"^(#{1,6}) (.*)$", line)):
            yield len(m[1]), m[2].strip()


def slug(text: str) -> str:
    """GitHub's anchor of a heading (before the -1, -2 ... of repeated ones)."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def runnable(cmd: str) -> str:
    """A recorded command as it runs today: ``python benchmarks/NAME.py ...`` (before the package) becomes
    ``python -m benchmarks.<group>.NAME ...``; MPI benchmarks get their launcher."""
    m = re.match(r"python benchmarks/(\w+)\.py\b(.*)$", cmd)
    if m and m[1] in MODULES:
        cmd = f"python -m {MODULES[m[1]]}{m[2]}"
    m = re.match(r"python -m (\S+)", cmd)
    return LAUNCHER.get(m[1], "") + cmd if m else cmd


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


@dataclass
class Document:
    parts: list[Part]

    @classmethod
    def new(cls) -> Document:
        return cls([Part(TITLE, ["", INTRO, ""])])

    @classmethod
    def parse(cls, text: str) -> Document:
        parts: list[Part] = []
        part = sec = None
        fenced = False
        for line in text.splitlines():
            if _FENCE.match(line):
                fenced = not fenced
            if not fenced and line.startswith("# "):
                part, sec = Part(line[2:].strip()), None
                parts.append(part)
                continue
            if part is None:  # text before any part: a part without a heading
                part = Part("")
                parts.append(part)
            if not fenced and line.startswith("## "):
                sec = Section(line[3:].strip(), [line])
                part.sections.append(sec)
            elif sec is not None:
                sec.lines.append(line)
            else:
                part.intro.append(line)
        return cls(parts)

    def render(self) -> str:
        self._index()
        out = []
        for p in self.parts:
            chunk = [f"# {p.title}"] if p.title else []
            if _strip(p.intro):
                chunk.append("\n".join(_strip(p.intro)))
            chunk += [s.text for s in p.sections]
            out.append("\n\n".join(chunk))
        return "\n\n".join(out) + "\n"

    # -------------------------------------------------------------- parts

    def _order(self, p: Part) -> float:
        if p is self.parts[0] and p.title == TITLE:
            return -1
        if p.title == APPENDIX:
            return float("inf")
        for i, q in enumerate(QUESTIONS):
            if p.title == q.heading:
                return i
        return len(QUESTIONS)

    def questions(self) -> list[Part]:
        """The parts that hold figures: all but the title's and the appendix."""
        return [p for p in self.parts if p.title and 0 <= self._order(p) < float("inf")]

    def part(self, q: Question) -> Part:
        """The part of question ``q``, made (in the order of :data:`QUESTIONS`) when missing."""
        for p in self.parts:
            if p.title == q.heading:
                return p
        new = Part(q.heading)
        order = QUESTIONS.index(q) if q in QUESTIONS else len(QUESTIONS)
        at = next((i for i, p in enumerate(self.parts) if self._order(p) > order), len(self.parts))
        self.parts.insert(at, new)
        return new

    def appendix(self) -> Part:
        for p in self.parts:
            if p.title == APPENDIX:
                return p
        new = Part(APPENDIX, ["", "Runs whose figures a later run replaced, each verbatim under its original "
                                  "heading, oldest first.", ""])
        self.parts.append(new)
        return new

    # -------------------------------------------------------------- sections

    def put(self, title: str, text: str, q: Question) -> None:
        """Section ``title`` (its full text, heading included) into the part of ``q``; a section of that title
        in any question's part moves to the appendix, and the new one takes its place there if it was ``q``'s."""
        new = Section(title, text.rstrip("\n").split("\n"))
        target = self.part(q)
        for p in self.parts:  # the title's part too: a file of the old layout (every section under the title)
            if p.title == APPENDIX:
                continue
            for i, s in enumerate(p.sections):
                if s.title == title and not (p is self.parts[0] and title == INDEX):
                    p.sections.pop(i)
                    self.archive(s, f"{_NOTE} by the run of {new.date or 'a later date'} in \"{q.heading}\".*")
                    if p is target:
                        target.sections.insert(i, new)
                        return
                    target.sections.append(new)
                    return
        target.sections.append(new)

    def archive(self, s: Section, note: str) -> None:
        """``s``, verbatim under its heading and ``note``, into the appendix in date order (an exact copy of an
        entry already there is not added twice)."""
        app = self.appendix()
        body = _strip(s.lines[1:])
        if any(body in (_strip(x.lines[1:]), _strip(x.lines[1:])[2:]) for x in app.sections):
            return
        entry = Section(s.title, [s.lines[0], "", note, "", *body])
        at = next((i for i, x in enumerate(app.sections) if x.date > s.date), len(app.sections))
        app.sections.insert(at, entry)

    # -------------------------------------------------------------- index

    def _anchors(self) -> dict[int, str]:
        """id(part or section) -> its heading's anchor, with GitHub's suffixes for repeated headings."""
        seen: dict[str, int] = {}
        out: dict[int, str] = {}

        def take(text: str) -> str:
            base = slug(text)
            n = seen.get(base, 0)
            seen[base] = n + 1
            return base if n == 0 else f"{base}-{n}"

        for p in self.parts:
            if p.title:
                out[id(p)] = take(p.title)
            for _, h in _headings(p.intro):
                take(h)
            for s in p.sections:
                for k, (_, h) in enumerate(_headings(s.lines)):
                    a = take(h)
                    if k == 0:
                        out[id(s)] = a
        return out

    def _index(self) -> None:
        """Rewrite the section "Index" of the title's part from the question parts."""
        if not self.parts or self.parts[0].title != TITLE:
            self.parts.insert(0, Part(TITLE, ["", INTRO, ""]))
        head = self.parts[0]
        index = next((s for s in head.sections if s.title == INDEX), None)
        if index is None:
            index = Section(INDEX, [f"## {INDEX}"])
            head.sections.insert(0, index)
        anchors = self._anchors()
        rows = ["| question | section | command (from the repository root) | latest figures |", "|---|---|---|---|"]
        for p in self.questions():
            for k, s in enumerate(p.sections):
                q = f"[{_cell(p.title)}](#{anchors[id(p)]})" if k == 0 else ""
                cmd = s.command
                rows.append(f"| {q} | [{_cell(s.title)}](#{anchors[id(s)]}) | "
                            f"{f'`{_cell(runnable(cmd))}`' if cmd else 'by hand (notes)'} | {s.date} |")
        lines = [f"## {INDEX}", "", *rows]
        app = next((p for p in self.parts if p.title == APPENDIX), None)
        if app is not None and app.sections:
            lines += ["", f"Superseded runs ({len(app.sections)}, oldest first): [{APPENDIX}](#{anchors[id(app)]})."]
        index.lines = lines
