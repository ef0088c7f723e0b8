"""The machine the epoch model (:mod:`.epoch`) predicts for: nodes of ranks,
the two paths a message can take, the link a node's ranks share, and the
compute model of one rank.

A :class:`Machine` is ``ranks_per_node`` ranks on each node (placed in
blocks: ranks ``k i .. k i + k - 1`` share node ``i``), with

- an intra-node path (:attr:`Machine.intra`: shared memory, α and β per
  message of one rank),
- an inter-node path (:attr:`Machine.inter`: α per message, β the inverse
  of one rank's injection rate),
- the node's link, shared by its ranks (:attr:`Machine.link_rate`, bytes/s),
  each rank's share of it while the node's other ranks send given by the
  machine's contention model (:attr:`Machine.contention`,
  :mod:`.contention`: max-min fair sharing, the static share, or the node's
  bytes as one pipe),
- the compute model of a rank (:class:`ComputeModel`, fitted on the machine by
  ``python -m benchmarks.training.simulate_bench --fit-only``, which writes
  ``core/machines/this.json``; another CPU's is scaled by a documented factor).

Machines are data: the presets are the JSON files in ``core/machines/``
(each field with the source of its number) in the registry :data:`MACHINES`,
where a plugin registers its own (``MACHINES.register(machine)``), and
:func:`machine_of` also takes a file path or a spec string such as
``ranks=48,intra=0.4us:10GB/s,inter=1.5us:12GB/s,link=12.5GB/s,cores=48,compute=this*1.0``
(its values parsed by :mod:`.machine_spec`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from . import machine_spec as spec
from .errors import UserError
from .machine_check import check_factor, check_machine, number, whole
from .registry import Registry
from .thread_scaling import ThreadScaling, amdahl_slowdown, scaling_from_json


@dataclass(frozen=True)
class Channel:
    """One way a message travels: it takes ``alpha + beta * bytes`` seconds.

    Attributes: alpha (s: a message's latency); beta (s per byte); source (where the numbers come from);
    overhead (s a rank's processor spends on each further message it sends or receives when several are in
    flight at once: what ``osu_mbw_mr`` measures with one pair at small sizes, less the bytes; None: every
    message a full ``alpha``, the model before issue 58).
    """

    alpha: float
    beta: float
    source: str = ""
    overhead: float | None = None

    def latency(self, sent, received) -> np.ndarray:
        """Seconds of latency of a rank's messages ``sent`` and ``received`` (arrays) together in one stage.

        With an ``overhead``: the first message's ``alpha``, then ``overhead`` for every further message the
        rank sends or receives (LogP's o, paid by the sender's and the receiver's processor for each message:
        a rank that sends and receives pays both). Without one: ``alpha`` for each of ``max(sent, received)``
        (the model before issue 58)."""
        s = np.asarray(sent, float)
        r = np.asarray(received, float)
        if self.overhead is None:
            return self.alpha * np.maximum(s, r)
        n = s + r
        return np.where(n > 0, self.alpha + self.overhead * np.maximum(n - 1, 0), 0.0)


@dataclass(frozen=True)
class ComputeModel:
    """Seconds of compute per rank and training step, linear in the work.

    Attributes
    ----------
    spmm : float
        s per (nonzero of Â · column of the SpMM).
    dense : float
        s per (row · multiply-add of the dense products).
    elem : float
        s per (row · column) of elementwise work (activations, dropout, loss).
    const : float
        s per step (Adam, small reductions).
    source : str
    parallel : the fraction of each term (spmm, dense, elem, const) that runs over a rank's threads: the SpMM
        (its parallel kernel) and the dense products (BLAS) all of it; elementwise work half (the fused dropout
        kernels are parallel, numpy's own elementwise operations and the loss are not); Adam none (numpy).
        Assumed, then checked against measured 1x1, 1x2 and 2x1 epochs (a preset's JSON may give its own)
    threads : the threads per rank the coefficients are for (fitted: 1)
    scaling : the measured speedup of each term over T threads (a compute file's ``threads`` figure,
        :mod:`.thread_scaling`); None: Amdahl's law with ``parallel``
    """

    spmm: float
    dense: float
    elem: float
    const: float
    source: str = ""
    parallel: tuple[float, float, float, float] = (1.0, 1.0, 0.5, 0.0)
    threads: int = 1
    scaling: ThreadScaling | None = None

    def scaled(self, factor: float, source: str) -> ComputeModel:
        """Every coefficient times ``factor`` (another CPU, by a documented ratio)."""
        return replace(self, spmm=self.spmm * factor, dense=self.dense * factor, elem=self.elem * factor,
                       const=self.const * factor, source=source)

    def _slowdown(self, threads: int) -> np.ndarray:
        """Each term's time on ``threads`` threads over its time on one: the measured figure, else Amdahl."""
        if self.scaling is not None:
            return self.scaling.slowdown(threads, self.parallel)
        return amdahl_slowdown(threads, self.parallel)

    def threaded(self, threads: int) -> ComputeModel:
        """The model of a rank computing with ``threads`` threads (from this one's, whatever its threads):
        each term's parallel fraction runs T times faster (Amdahl's law; cores the node does not have are
        the oversubscription's, :meth:`Machine.oversubscription`)."""
        c = np.array([self.spmm, self.dense, self.elem, self.const]) / self._slowdown(self.threads)
        c = c * self._slowdown(threads)
        return replace(self, spmm=float(c[0]), dense=float(c[1]), elem=float(c[2]), const=float(c[3]),
                       threads=max(1, int(threads)))

    def to_json(self) -> dict:
        out = {"spmm": self.spmm, "dense": self.dense, "elem": self.elem, "const": self.const, "source": self.source}
        if self.parallel != ComputeModel.parallel:  # the assumed fractions are not written into every fit
            out["parallel"] = dict(zip(("spmm", "dense", "elem", "const"), self.parallel))
        if self.scaling is not None:
            out["threads"] = self.scaling.to_json()
        return out


@dataclass(frozen=True)
class Machine:
    """Nodes of ranks, the intra- and inter-node paths, the shared link and a rank's compute.

    Attributes
    ----------
    name, description : as :data:`MACHINES` lists them
    ranks_per_node : ranks on one node (a job of P ranks uses ``min(P, ranks_per_node)``)
    intra, inter : the two paths (an inter-node path's beta is one rank's injection rate)
    link_rate : bytes/s of a node's link, shared by its ranks (None: no shared bound)
    cores_per_node : cores of one node (ranks x threads beyond them share cores)
    compute : one rank's compute model (one thread)
    source : where the machine's figures come from
    oversubscribed_sync : seconds a synchronization costs per unit of oversubscription (ranks x threads over a
        node's cores): a waiting MPI rank busy-polls, so the rank it waits for gets its core a scheduling slice
        later (measured here by ``benchmarks.training.pingpong --oversubscribed``; 0: not modelled)
    threads : threads in each rank (:meth:`with_threads`; ``compute`` is a rank's with them)
    contention : how a node's ranks share its link (:data:`shgcn.core.contention.MODELS`: ``fluid``, ``maxmin``,
        ``share``, ``aggregate``); without one: ``fluid`` (work-conserving, issue 58)
    message_rate : messages/s a node's adapter handles in each direction (each message keeps it busy
        ``1 / message_rate`` s besides its bytes; None: not modelled)
    """

    name: str
    ranks_per_node: int
    intra: Channel
    inter: Channel
    link_rate: float | None
    cores_per_node: int
    compute: ComputeModel
    description: str = ""
    source: str = ""
    oversubscribed_sync: float = 0.0
    threads: int = 1
    contention: str = "fluid"
    message_rate: float | None = None

    def nodes(self, ranks: int) -> int:
        """Nodes a job of ``ranks`` ranks spans."""
        return -(-int(ranks) // self.node_size(ranks))

    def node_size(self, ranks: int) -> int:
        """Ranks per node of a job of ``ranks`` ranks."""
        return max(1, min(int(ranks), self.ranks_per_node))

    def with_ranks_per_node(self, k: int) -> Machine:
        return replace(self, ranks_per_node=int(k))

    def with_threads(self, threads: int) -> Machine:
        """This machine with ``threads`` threads in each rank: their compute model, and ranks x threads
        counted against the node's cores."""
        threads = max(1, int(threads))
        return self if threads == self.threads else replace(self, threads=threads, compute=self.compute.threaded(threads))

    def flat_path(self, ranks: int) -> Channel:
        """The path a collective among ``ranks`` ranks crosses: the network once they span nodes."""
        return self.inter if self.nodes(ranks) > 1 else self.intra

    def oversubscription(self, ranks: int, threads: int | None = None) -> float:
        """How much slower compute runs when a node's ranks x threads (default: the machine's) exceed its cores
        (1 when they fit)."""
        busy = self.node_size(ranks) * max(1, self.threads if threads is None else threads)
        return max(1.0, busy / max(1, self.cores_per_node))

    def sync_delay(self, ranks: int) -> float:
        """Seconds one synchronization (an exchange's stage, the allreduce) costs on an oversubscribed node."""
        os_ = self.oversubscription(ranks)
        return self.oversubscribed_sync * os_ if os_ > 1 else 0.0


# ---------------------------------------------------------------- presets (data files)

_DIR = Path(__file__).resolve().parent / "machines"  # package data: the preset machines and fitted compute models


def _compute_of(d: dict | str) -> ComputeModel:
    """A compute model from its JSON: coefficients, or ``{"scale_of": "this", "factor": f, "source": ...}``."""
    if isinstance(d, str):
        return load_compute(d)
    if "threads" in d:  # the measured speedups over threads (benchmarks.training.threads_sweep --fit)
        return replace(_compute_of({k: v for k, v in d.items() if k != "threads"}),
                       scaling=scaling_from_json(d["threads"]))
    if "scale_of" in d:
        base = load_compute(d["scale_of"])
        return base.scaled(check_factor(number(d["factor"]), "compute.factor"),
                           f"{base.source}, times {d['factor']}: {d.get('source', '')}")
    c = ComputeModel(number(d["spmm"]), number(d["dense"]), number(d["elem"]), number(d["const"]), d.get("source", ""))
    par = d.get("parallel")  # the fractions that run over threads, when the file gives its own
    if par:
        c = replace(c, parallel=(number(par["spmm"]), number(par["dense"]), number(par["elem"]), number(par["const"])))
    return c


def load_compute(name: str = "this") -> ComputeModel:
    """The compute model fitted on a machine (``core/machines/compute-<name>.json``, written by the fit)."""
    path = _DIR / f"compute-{name}.json"
    try:
        text = path.read_text()
    except OSError:
        known = sorted(p.name[8:-5] for p in _DIR.glob("compute-*.json"))
        raise UserError(f"no fitted compute model {name!r} ({path}); known: {', '.join(known)}") from None
    return _compute_of(json.loads(text))


def compute_path() -> Path:
    """Where the fit of this machine's compute model is written (in the source tree, package data)."""
    return _DIR / "compute-this.json"


def _path_of(d: dict) -> Channel:
    o = d.get("overhead")
    return Channel(number(d["alpha"]), number(d["beta"]), d.get("source", ""),
                   None if o is None else number(o["seconds"] if isinstance(o, dict) else o))


def machine_from_json(d: dict, where: str | None = None) -> Machine:
    """A :class:`Machine` from its JSON description (the preset files' format), every figure checked
    (:func:`check_machine`); ``where``: what the one-line errors name (default: the machine's name)."""
    if not isinstance(d, dict):
        raise UserError(f"{where or 'machine'}: not a machine description (a JSON {type(d).__name__}, not an "
                        "object with name, ranks_per_node, intra, inter, cores_per_node and compute)")
    where = where or f"machine {str(d.get('name', '?'))[:60]!r}"
    try:
        m = Machine(name=str(d["name"]), ranks_per_node=whole(d["ranks_per_node"]), intra=_path_of(d["intra"]),
                    inter=_path_of(d["inter"]),
                    link_rate=number(d["link"]["rate"]) if d.get("link") else None,
                    cores_per_node=whole(d["cores_per_node"]), compute=_compute_of(d["compute"]),
                    description=str(d.get("description", "")), source=str(d.get("source", "")),
                    oversubscribed_sync=number(d.get("oversubscribed_sync", {}).get("seconds", 0.0)),
                    contention=str(d["link"].get("contention", "fluid")) if d.get("link") else "fluid",
                    message_rate=_message_rate(d["link"]) if d.get("link") else None)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
        raise UserError(f"{where}: not a machine description ({type(e).__name__}: {e})") from None
    except UserError as e:  # a figure's own check (compute.factor's): the file named first
        raise UserError(f"{where}: {e}") from None
    return check_machine(m, where)


def _message_rate(link: dict) -> float | None:
    """A link's ``message_rate``: ``{"messages_per_s": x, "source": ...}`` or a number; None when absent."""
    r = link.get("message_rate")
    if r is None:
        return None
    return number(r["messages_per_s"] if isinstance(r, dict) else r)


def _shipped() -> list[Machine]:
    """The presets of the package (``core/machines/<name>.json``; ``compute-*.json`` are compute models)."""
    return [machine_from_json(json.loads(f.read_text())) for f in sorted(_DIR.glob("*.json"))
            if not f.name.startswith("compute-")]


# the preset machines by name (``--machine NAME``): the package's, then those the plugins register
MACHINES: Registry[Machine] = Registry.of("--machine", *_shipped())


def presets() -> dict[str, Machine]:
    """Every preset machine by name (:data:`MACHINES`, the plugins' included)."""
    return dict(MACHINES)


def _spec_compute(value: str, item: str) -> ComputeModel:
    """``NAME*FACTOR``: a fitted compute model scaled by a finite factor above 0."""
    name, star, factor = value.partition("*")
    try:
        f = float(factor) if star else 1.0
    except ValueError:
        raise UserError(f"machine spec: {item!r}: the factor {factor!r} is not a number (compute=this*1.5)") from None
    check_factor(f, f"machine spec: {item!r}")
    return load_compute(name).scaled(f, f"{name} scaled by {factor or 1}")


def _spec_field(key: str, value: str, item: str) -> tuple[str, object]:
    """The :class:`Machine` field and value of one ``key=value`` of a spec."""
    if key in ("ranks", "cores"):
        return ("ranks_per_node" if key == "ranks" else "cores_per_node"), spec.count(value, item)
    if key in ("intra", "inter"):
        alpha, beta, overhead = spec.path(value, item)
        return key, Channel(alpha, beta, "given on the command line", overhead)
    if key == "link":
        return "link_rate", None if value == "none" else spec.rate(value, item)
    if key == "compute":
        return "compute", _spec_compute(value, item)
    if key == "sync":
        return "oversubscribed_sync", spec.time(value, item)
    if key == "msgrate":
        return "message_rate", spec.message_rate(value, item)
    if key == "contention":
        from .contention import MODELS

        if value not in MODELS:
            raise UserError(f"machine spec: {item!r}: choose a contention model from {', '.join(MODELS)}")
        return "contention", value
    if key == "name":
        if not value.strip():
            raise UserError(f"machine spec: {item!r}: name the machine")
        return "name", value
    raise UserError(f"machine spec: unknown key {key!r} (ranks, intra, inter, link, msgrate, contention, cores, compute, "
                    "sync, name)")


def machine_from_spec(text: str, base: Machine | None = None) -> Machine:
    """A machine from ``key=value`` pairs over ``base`` (default: the ``this`` preset).

    Keys: ``ranks`` (ranks per node), ``intra`` and ``inter`` (``LATENCY:RATE[:OVERHEAD]``, e.g. ``1.5us:12GB/s`` or
    ``1us:12GB/s:0.14us``: the overhead of each further message in flight; without one each message a full
    latency),
    ``link`` (a rate, or ``none``), ``msgrate`` (a node adapter's messages/s, e.g. ``32.4M/s``, or ``none``),
    ``contention`` (how a node's ranks share the link: ``fluid``, ``maxmin``, ``share``, ``aggregate``;
    :mod:`.contention`), ``cores``, ``compute`` (``NAME*FACTOR``: a fitted model scaled), ``sync``
    (a time: one synchronization's cost per unit of oversubscription), ``name``. Every value is checked: a
    malformed, zero, negative or infinite one is one line naming its ``key=value``.
    """
    m = base or presets()["this"]
    fields: dict = {"name": "custom", "source": f"spec {text!r} over the {m.name} preset"}
    for item in filter(None, (x.strip() for x in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"machine spec: {item!r} is not key=value")
        field, v = _spec_field(key.strip(), value.strip(), item)
        fields[field] = v
    return check_machine(replace(m, **fields), f"machine spec {text!r}")


MAX_FILE = 1 << 20  # bytes of a machine file: a description is a few hundred


def _machine_file(path: str) -> Machine:
    """A machine .json file, its type and size checked before it is read (a FIFO would block, /dev/zero never end)."""
    import os
    import stat

    where = f"--machine {path}"
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"{where}: not a regular file (a directory, FIFO or device): write the machine to a file")
        if st.st_size > MAX_FILE:
            raise UserError(f"{where}: {st.st_size:,} bytes; a machine description is at most {MAX_FILE:,}")
        d = json.loads(Path(path).read_text())
    except (OSError, ValueError, RecursionError) as e:
        raise UserError(f"{where}: cannot read the machine file ({type(e).__name__}: {str(e)[:200]})") from None
    return machine_from_json(d, where)


def machine_of(machine: str | Machine) -> Machine:
    """A :class:`Machine` from a preset name, a JSON file, a spec string (``key=value,...``), or itself."""
    if isinstance(machine, Machine):
        return machine
    known = presets()
    if machine in known:
        return known[machine]
    if machine.endswith(".json"):
        return _machine_file(machine)
    if "=" in machine:
        return machine_from_spec(machine)
    raise UserError(f"unknown machine {machine!r}; choose one of {', '.join(known)}, a .json file, or a spec "
                    "like ranks=48,inter=1.5us:12GB/s,link=12.5GB/s")


def this_compute() -> ComputeModel:
    """This machine's fitted compute model (``core/machines/compute-this.json``)."""
    return load_compute("this")
