"""Slurm's ``srun`` as its variables describe the job step this process is a task of: the tasks, this task's rank,
its rank on its node and the tasks there, the step's nodes (the first one's name: where rank 0 runs) and the MPI
plugin srun started it with (``--mpi=pmi2``, ``pmix``, ``none``). Only the standard library: the trainer reads it
before numpy and MPI load, and torchdist before torch.distributed starts.

Slurm writes a step's tasks per node compressed (``SLURM_STEP_TASKS_PER_NODE=2(x3),1``: three nodes of 2, one of
1) and its nodes as a host list (``node[01-04,07],gpu1``); :func:`counts` and :func:`first_host` read both."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

# the variables of srun's MPI plugins in a task's environment: pmi2 sets PMI_FD (and PMI_RANK, PMI_SIZE), pmix PMIX_RANK
PMI2_VARS = ("PMI_FD", "PMI_RANK")
PMIX_VARS = ("PMIX_RANK", "PMIX_NAMESPACE")
# torchdist's rendezvous port without MASTER_PORT: BASE_PORT + (the job id and the step id) modulo PORTS
BASE_PORT, PORTS = 20000, 20000


@dataclass(frozen=True)
class Step:
    """A task of an srun step: ``tasks`` in all, this one ``rank`` (``SLURM_PROCID``), ``local_rank`` on node
    ``node`` of ``per_node`` (the tasks on each node of the step), ``nodelist`` (Slurm's host list), ``plugin``
    (srun's MPI plugin: what ``SLURM_MPI_TYPE`` says, else what the plugins' variables show, else ``none``)
    ``job`` and ``step_id`` (the job's and the step's ids)."""

    tasks: int
    rank: int
    local_rank: int
    node: int
    per_node: tuple[int, ...]
    nodelist: str
    plugin: str
    job: int
    step_id: int = 0

    @property
    def local_size(self) -> int:
        """The tasks on this task's node."""
        return self.per_node[self.node] if self.node < len(self.per_node) else self.tasks

    @property
    def ranks_per_node(self) -> int | None:
        """The tasks on every node when all nodes have as many (Slurm's block layout: ranks 0..K-1 on the first
        node, and so on, which is what ``--ranks-per-node K`` means); None when they differ."""
        return self.per_node[0] if self.per_node and len(set(self.per_node)) == 1 else None

    def first_host(self) -> str:
        """The first node of the step: where rank 0 runs (Slurm's default block distribution)."""
        return first_host(self.nodelist)

    def port(self) -> int:
        """A rendezvous port of this step (the same on every task; another for each job and step sharing a node,
        unless their ids are PORTS apart)."""
        return BASE_PORT + (self.job * 8 + self.step_id) % PORTS


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None


def counts(text: str) -> tuple[int, ...]:
    """Slurm's compressed counts, ``2(x3),1`` -> (2, 2, 2, 1); () when unreadable."""
    out: list[int] = []
    for item in filter(None, (t.strip() for t in text.split(","))):
        m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", item)
        if m is None:
            return ()
        out += [int(m[1])] * int(m[2] or 1)
    return tuple(out)


def first_host(nodelist: str) -> str:
    """The first host of a Slurm host list: ``node[07-09,11]-ib,gpu1`` -> ``node07-ib``."""
    m = re.match(r"([^,\[]*)(?:\[([^\]]*)\])?([^,]*)", nodelist.strip())
    if m is None:
        return nodelist
    prefix, ranges, suffix = m[1], m[2], m[3]
    first = (ranges or "").split(",")[0].split("-")[0]
    return f"{prefix}{first}{suffix}"


def plugin(env: Mapping[str, str]) -> str:
    """srun's MPI plugin for this task: ``SLURM_MPI_TYPE`` when srun set it, else the one whose variables are here."""
    given = env.get("SLURM_MPI_TYPE", "").strip()
    if given:
        return given
    if any(v in env for v in PMIX_VARS):
        return "pmix"
    return "pmi2" if any(v in env for v in PMI2_VARS) else "none"


def step(env: Mapping[str, str]) -> Step | None:
    """The srun step this process is a task of; None when srun did not start it (no ``SLURM_STEP_NUM_TASKS`` and
    ``SLURM_PROCID``: a batch script's own process, ``mpirun`` inside an allocation, no Slurm)."""
    tasks, rank = _number(env.get("SLURM_STEP_NUM_TASKS")), _number(env.get("SLURM_PROCID"))
    if tasks is None or rank is None or _number(env.get("SLURM_STEP_ID")) is None:
        return None
    per_node = counts(env.get("SLURM_STEP_TASKS_PER_NODE", "")) or (tasks,)
    return Step(tasks=tasks, rank=rank, local_rank=_number(env.get("SLURM_LOCALID")) or 0,
                node=_number(env.get("SLURM_NODEID")) or 0, per_node=per_node,
                nodelist=env.get("SLURM_STEP_NODELIST") or env.get("SLURM_NODELIST", "localhost"), plugin=plugin(env),
                job=_number(env.get("SLURM_JOB_ID")) or 0, step_id=_number(env.get("SLURM_STEP_ID")) or 0)


def layout_ranks_per_node(env: Mapping[str, str]) -> int:
    """``--ranks-per-node`` as Slurm laid the step out: the tasks on each node when every node has as many and
    the ranks are placed in blocks (Slurm's default; not ``--distribution=cyclic`` or ``plane``); 0 otherwise
    (the trainer then finds the nodes itself: the ranks that share memory)."""
    task = step(env)
    if task is None or task.tasks < 2:
        return 0
    distribution = env.get("SLURM_DISTRIBUTION", "").strip()
    if distribution and not distribution.startswith("block"):
        return 0
    return task.ranks_per_node or 0
