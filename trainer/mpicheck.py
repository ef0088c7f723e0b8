"""mpi4py's MPI against the launcher that started the job.

``mpirun`` of one MPI starting processes that load another MPI's library does not make one job: MPICH's
``mpirun`` (Hydra) under an mpi4py on Open MPI starts P processes that each see a job of 1 rank, and Open
MPI's ``mpirun`` under an mpi4py on MPICH stops them in ``MPI_Init``. Without this check the user who ran
``mpirun -n 2`` reads "the store has 2 parts but the job has 1 rank; run with mpirun -n 2".

:func:`start` loads mpi4py's MPI without initializing it, reads the library's name
(``MPI_Get_library_version`` needs no ``MPI_Init``) and the launcher's variables, refuses a launcher of the
other family before ``MPI_Init`` could abort the process, initializes MPI as mpi4py would have (the thread
level of ``mpi4py.rc``, finalized at exit), and refuses a job of 1 rank that the launcher started as several:
in one line that names both. An mpi4py that finds no MPI library at all is one line too.

Under Slurm's ``srun`` the launcher is srun's MPI plugin (``--mpi=pmi2``, ``pmix``, ``none``): a plugin that
mpi4py's MPI cannot use (:func:`srun_mismatch`: ``none`` for any MPI, ``pmix`` for an MPICH configured without
PMIx, ``pmi2`` for Open MPI) is refused before ``MPI_Init``, in one line naming the plugin and the MPI.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from shgcn.core.errors import UserError

from . import slurm

# (the size variable, the rank variable, the launcher, its MPI family): the first one present names the launcher;
# a family of "" is a protocol (PMI) that several MPIs speak
LAUNCHERS = (
    ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "Open MPI's mpirun", "Open MPI"),
    ("MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK", "MVAPICH's mpirun_rsh", "MPICH"),
    ("PMI_SIZE", "PMI_RANK", "a PMI launcher (srun --mpi=pmi2, an MPICH-derived mpirun)", ""),
)
HYDRA = "MPI_LOCALNRANKS"  # set by Hydra, the mpirun of MPICH and Intel MPI, beside PMI_SIZE
INSTALL = "pip install 'shgcn[mpich]' (MPICH and its mpirun), or a system MPI (apt-get install mpich, or openmpi-bin)"


class MPIMismatch(UserError):
    """mpi4py's MPI does not match the launcher, or there is none (exit code 2). ``speaks``: whether this
    process prints the line (the launcher's rank 0, or a process no launcher numbered): the processes of a
    broken job each see themselves as rank 0."""

    def __init__(self, message: str, speaks: bool = True):
        super().__init__(message)
        self.speaks = speaks


@dataclass(frozen=True)
class Launcher:
    """What the launcher's variables say: its name, its MPI family ("" for any), the variable that gives the
    processes it started and their number, and this process's rank among them (None: not given)."""

    name: str
    family: str
    variable: str
    size: int
    rank: int | None = None


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None


def detect(env: Mapping[str, str]) -> Launcher | None:
    """The launcher that started this process, from its variables; None: none did (a singleton). srun (a task
    of a Slurm job step) is named with its MPI plugin, ``srun --mpi=pmi2``, unless an mpirun started the task."""
    for size_var, rank_var, name, family in LAUNCHERS:
        size = _number(env.get(size_var))
        if size is None:
            continue
        if size_var == "PMI_SIZE" and HYDRA in env:
            name, family = "MPICH's mpirun (Hydra)", "MPICH"
        elif size_var == "PMI_SIZE" and slurm.step(env) is not None:
            break  # srun's pmi2 plugin: named below
        return Launcher(name, family, size_var, size, _number(env.get(rank_var)))
    task = slurm.step(env)
    if task is None:
        return None
    return Launcher(f"srun --mpi={task.plugin}", "", "SLURM_STEP_NUM_TASKS", task.tasks, task.rank)


# srun's MPI plugins that each MPI family's library speaks (MPICH: PMI-1 and PMI-2, and PMIx where it was configured
# with it; Open MPI 5: PMIx alone)
PLUGINS = {"MPICH": ("pmi2", "pmi1", "cray_shasta"), "Open MPI": ("pmix",)}


def srun_mismatch(env: Mapping[str, str], library: str) -> str | None:
    """The line that refuses a task of an srun step of several tasks whose MPI plugin mpi4py's MPI cannot use
    (``--mpi=none``: every task would be a job of 1 rank; pmix under an MPICH without PMIx; pmi2 under Open MPI),
    before ``MPI_Init``; None otherwise (one task, no srun, another launcher, an MPI of another family)."""
    task = slurm.step(env)
    launcher = detect(env)
    if task is None or task.tasks < 2 or launcher is None or not launcher.name.startswith("srun"):
        return None
    mine = family(library)
    speaks = PLUGINS.get(mine, ())
    if mine == "MPICH" and "pmix" in library.lower():
        speaks = (*speaks, "pmix")
    kind = task.plugin.split("_")[0]  # pmix_v4 is pmix
    if kind != "none" and (not mine or kind in speaks):
        return None
    use = f"srun --mpi={speaks[0]}" if speaks else "srun with the MPI plugin of mpi4py's MPI"
    return (f"the job was started by srun --mpi={task.plugin} with {task.tasks} tasks (SLURM_STEP_NUM_TASKS="
            f"{task.tasks}) but mpi4py's MPI is {library_name(library)}, which does not speak that plugin's "
            f"protocol: start it with {use} (srun --mpi=list shows the plugins), or have mpi4py load the library of "
            f"an MPI that does (MPI4PY_LIBMPI=/path/to/libmpi.so)")


def family(library: str) -> str:
    """``Open MPI``, ``MPICH`` (MPICH and the MPIs built on it: Intel MPI, MVAPICH, Cray MPICH) or "" (another)."""
    text = library.lower()
    if "open mpi" in text:
        return "Open MPI"
    return "MPICH" if any(w in text for w in ("mpich", "intel(r) mpi", "mvapich")) else ""


def library_name(library: str) -> str:
    """The first line of ``MPI_Get_library_version``, short: ``MPICH 5.0.2``, ``Open MPI v5.0.11``."""
    first = " ".join(library.strip().splitlines()[0].split()) if library.strip() else "an unknown MPI"
    m = re.match(r"MPICH Version: (\S+)", first)
    return f"MPICH {m[1]}" if m else first.split(",")[0][:80]


def mismatch(launcher: Launcher | None, library: str, size: int | None = None, prefix: str | None = None
             ) -> str | None:
    """The line that refuses the job, or None. Before ``MPI_Init`` (``size`` None): a launcher of one family and
    a library of the other; after it: a job of 1 rank that the launcher started as several processes.
    ``prefix``: the environment whose ``bin/mpirun`` is named when it is MPICH's (default: this one's)."""
    if launcher is None:
        return None
    mine, theirs = family(library), launcher.family
    if size is None and not (mine and theirs and mine != theirs):
        return None
    if size is not None and not (size == 1 and launcher.size > 1):
        return None
    result = "which do not work together" if size is None else "to which each process is a job of 1 rank"
    processes = f"{launcher.size} process{'es' if launcher.size != 1 else ''}"
    wheel = "; pip install 'shgcn[mpich]' brings MPICH's" if theirs == "MPICH" else ""
    whose = f"{theirs}'s" if theirs else "the launcher's MPI's"
    use = _launcher_of(mine, prefix or sys.prefix)
    return (f"the job was started by {launcher.name} with {processes} ({launcher.variable}={launcher.size}) but "
            f"mpi4py's MPI is {library_name(library)}, {result}: start it with {use}, or have mpi4py load {whose} "
            f"library (MPI4PY_LIBMPI=/path/to/libmpi.so{wheel})")


def _launcher_of(mine: str, prefix: str) -> str:
    """The mpirun that matches mpi4py's MPI, by its path where the environment has one (the mpich wheel's)."""
    local = Path(prefix) / "bin" / "mpirun"
    if mine == "MPICH" and local.exists():
        return f"MPICH's mpirun ({local})"
    return f"{mine}'s mpirun" if mine else "the mpirun of mpi4py's MPI"


def no_library(error: str) -> str:
    """The line for an mpi4py that loaded no MPI library (its error lists every file it tried)."""
    tried = [line for line in error.splitlines()[1:] if line.strip()]
    why = f" ({tried[-1].strip()})" if tried else ""
    return f"mpi4py found no MPI library{why}: install one: {INSTALL}"


def start(env: Mapping[str, str] | None = None):
    """``MPI.COMM_WORLD``, once the launcher is known to match mpi4py's MPI; :class:`MPIMismatch` otherwise.
    mpi4py's own warning about the environment ("suspicious MPI execution environment") is kept for a job
    that starts, and replaced by the one line for a job that does not."""
    env = os.environ if env is None else env
    import mpi4py

    if "mpi4py.MPI" not in sys.modules:
        mpi4py.rc.initialize = False  # MPI_Init below, once the launcher is known to match the library
        mpi4py.rc.finalize = True
    launcher = detect(env)
    speaks = launcher is None or launcher.rank in (None, 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            from mpi4py import MPI
        except RuntimeError as e:  # "cannot load MPI library" and the files it tried
            raise MPIMismatch(no_library(str(e)), speaks) from None
    library = MPI.Get_library_version()
    if not MPI.Is_initialized():
        if (line := srun_mismatch(env, library) or mismatch(launcher, library)) is not None:
            raise MPIMismatch(line, speaks)
        _init(MPI, mpi4py.rc)
    comm = MPI.COMM_WORLD
    if (line := mismatch(launcher, library, comm.size)) is not None:
        raise MPIMismatch(line, speaks)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return comm


def _init(MPI, rc) -> None:
    """``MPI_Init_thread`` at the level mpi4py would have asked for at its import (``rc.threads``,
    ``rc.thread_level``: ``MPI_THREAD_MULTIPLE`` by default, which the watchdog needs)."""
    if not getattr(rc, "threads", True):
        MPI.Init()
        return
    levels = {"single": MPI.THREAD_SINGLE, "funneled": MPI.THREAD_FUNNELED, "serialized": MPI.THREAD_SERIALIZED,
              "multiple": MPI.THREAD_MULTIPLE}
    MPI.Init_thread(levels.get(str(getattr(rc, "thread_level", "multiple")), MPI.THREAD_MULTIPLE))
