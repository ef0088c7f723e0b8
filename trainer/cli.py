"""``shgcn-train`` / ``python -m shgcn.trainer`` / ``trainer/train.py``:
train a GCN on a store with MPI, full-batch or mini-batch.

    mpirun -n P shgcn-train STORE [options]
    mpirun -n P python trainer/train.py STORE [options]     (from a checkout)
    shgcn-train STORE [options]                             (one rank, no mpirun)

P must equal the store's number of parts (k; k x c with ``--algorithm 1.5d
--replication c``; k x k with ``--algorithm 2d``). Exit codes: 0 success, 2 bad input
(wrong rank count, missing or corrupt store, bad option), 1 a failure on any
rank (the job is aborted with that rank's message, never left hanging).
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys

from shgcn.core.memory import size_argument

from .flags import add_part_options, given_minibatch_options, part_options
from .threads import THREAD_VARS, affinity_warning, launcher_rank, max_threads, thread_env_problem


def local_ranks() -> int:
    """The ranks the launcher started on this machine (its local size; srun's tasks on this node; 1 without a
    launcher)."""
    from .slurm import step

    if "MPI_LOCALNRANKS" not in os.environ and "OMPI_COMM_WORLD_LOCAL_SIZE" not in os.environ \
            and (task := step(os.environ)) is not None:
        return task.local_size
    return next((int(os.environ[k]) for k in ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                              "MV2_COMM_WORLD_LOCAL_SIZE", "PMI_SIZE") if os.environ.get(k)), 1)


def cores_share() -> int:
    """This rank's share of the machine's cores: cores / ranks on this machine (the launcher's local size),
    at least 1."""
    return max(1, (os.cpu_count() or 1) // max(local_ranks(), 1))


def share_cores(threads: int | None = None) -> int:
    """Set the threads of BLAS and numba before numpy loads, and return the threads a rank uses: ``threads``
    (``--threads``), else the rank's share of the cores (:func:`cores_share`; several ranks each starting
    one thread per core would oversubscribe the machine).

    numba's pool gets that many threads; BLAS (OpenMP, OpenBLAS, MKL) one: the backend splits the dense
    products between its threads itself (:meth:`.backends.numpy.NumpyBackend.gemm`), so that their sums do
    not depend on the thread count, and OpenBLAS's threads, which spin while they wait, never compete with
    numba's. ``--threads`` sets every variable; without it variables the user set are left alone.

    numba's OpenMP threads sleep as soon as a kernel ends (``OMP_WAIT_POLICY=PASSIVE`` unless the user chose):
    GNU OpenMP's default spins a worker for milliseconds after each parallel region, and on a rank whose
    threads alternate between numba's kernels and the backend's dense split (Python threads) that spinning
    worker holds the core the split's second half needs (measured: a mini-batch step's products 1.5x
    slower than with sleeping workers, benchmarks/RESULTS.md)."""
    share = threads or cores_share()
    for var in THREAD_VARS:
        value = str(share) if var == "NUMBA_NUM_THREADS" else "1"
        if threads is not None or not os.environ.get(var, "").strip():  # an empty variable is an unset one
            os.environ[var] = value
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return share


def threads_option(argv: list[str]) -> int | None:
    """``--threads T`` from the command line before argparse runs (the variables must be set before numpy
    loads, and parsing loads it); None when absent or not a number from 1 to :func:`max_threads` (the options'
    check reports it: numba's pool must never be asked for 100000 threads)."""
    for i, a in enumerate(argv):
        name, eq, value = a.partition("=")
        if len(name) > 4 and "--threads".startswith(name):  # argparse takes unambiguous prefixes too
            value = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            return int(value) if value.isdigit() and 1 <= int(value) <= max_threads() else None
    return None


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("shgcn")
    except metadata.PackageNotFoundError:  # a checkout that is not installed
        return "0+unknown"


def _hidden(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected widths like 16 or 128,128, got {text!r}") from None


def _batch_size(text: str) -> int | None:
    """``auto`` (None: 10% of the vertices) or a number; its range is the options' check's (one line)."""
    return None if text == "auto" else int(text)


def _fail_at(text: str) -> tuple[int, int]:
    r, _, e = text.partition(":")
    return int(r), int(e)


def _grid_options(p: argparse.ArgumentParser) -> None:
    """--memory-limit and the communication-avoiding algorithms."""
    p.add_argument("--memory-limit", type=size_argument, default=None, metavar="SIZE",
                   help="memory the ranks of one machine may hold, e.g. 16G: the modelled memory of every rank is "
                        "checked against it before training, and a job that will not fit stops with one line "
                        "(default: the memory this machine has available when the run starts)")
    from shgcn.core.algorithms import ALGORITHMS

    g = p.add_argument_group("distributed algorithms (--algorithm; 1.5d and 2d are full batch)")
    g.add_argument("--algorithm", choices=ALGORITHMS.names(), default="1d",
                   help="; ".join(f"{a.name}: {a.description}" for a in ALGORITHMS.values()))
    add_part_options(p, ALGORITHMS)


def _model_options(p: argparse.ArgumentParser) -> None:
    """The registered parts (--arch, --exchange, --backend) and their options."""
    from shgcn.core.archs import ARCHS
    from shgcn.core.exchanges import EXCHANGES

    from .backends import SPECS, devices

    p.add_argument("--exchange", choices=EXCHANGES.names(), default="p2p",
                   help="; ".join(f"{x.name}: {x.description}" for x in EXCHANGES.values()))
    p.add_argument("--ranks-per-node", type=int, default=0, metavar="K",
                   help="nodes of K consecutive ranks (virtual nodes: every case testable on one machine); 0: under "
                        "srun, Slurm's layout (its tasks per node), else the ranks that share memory "
                        "(MPI_Comm_split_type SHARED)")
    p.add_argument("--arch", choices=ARCHS.names(), default="gcn",
                   help="; ".join(f"{a.name}: {a.description}" for a in ARCHS.values()))
    p.add_argument("--backend", choices=SPECS.names(), default="numpy",
                   help="the compute backend: " + "; ".join(f"{b.name}: {b.description}" for b in SPECS.values()))
    p.add_argument("--device", choices=devices(), default="cpu",
                   help="where the backend computes: " + "; ".join(f"{b.name} on {', '.join(b.devices)}"
                                                                    for b in SPECS.values()))
    p.add_argument("--threads", type=int, default=None, metavar="T",
                   help="threads in each rank: BLAS, numba's SpMM and elementwise kernels, torch's intra-op threads; "
                        "losses do not depend on T (default: the cores of the machine / the ranks on it)")
    p.add_argument("--exchange-dtype", choices=("float32", "bfloat16", "float16"), default="float32",
                   help="the rows' type on the wire (16 bits: half the bytes; computation stays float32)")
    for reg in (ARCHS, EXCHANGES, SPECS):
        add_part_options(p, reg)


def _minibatch_options(p: argparse.ArgumentParser) -> None:
    from shgcn.core.sample import SAMPLERS

    mb = p.add_argument_group("mini-batch training (--mode minibatch)")
    mb.add_argument("--mode", choices=("full", "minibatch"), default="full", help="full-batch or mini-batch")
    mb.add_argument("--sampler", choices=SAMPLERS.names(), default="node",
                    help="the pipeline's samplers; every rank re-draws batch (seed, epoch, step) itself")
    mb.add_argument("--batch-size", type=_batch_size, default="auto", metavar="B",
                    help="vertices per batch (target for edge and rw), >= 1; auto: 10%% of the vertices, as the "
                         "pipeline")
    mb.add_argument("--walk-length", type=int, default=2, help="rw sampler: steps per walk")
    mb.add_argument("--batches-per-epoch", type=int, default=0,
                    help="0: n / batch size, which covers the training vertices once on average")
    mb.add_argument("--saint", choices=("auto", "on", "off"), default="auto",
                    help="GraphSAINT aggregator and loss normalization (auto: on for edge and rw, off for node)")
    mb.add_argument("--plan-ahead", choices=("auto", "inline", "thread"), default="auto",
                    help="sample and build the next batch's plan while the step's allreduce completes (inline), or "
                         "in a helper thread while the step computes and waits (thread: pays when a core is free "
                         "for it); auto: thread when each rank has --threads above 1, else inline")
    mb.add_argument("--norm-batches", type=int, default=50, help="batches pre-sampled for the normalization counts")
    mb.add_argument("--out-of-core", action="store_true",
                    help="hold the batch, not the block: each step reads its rows of Â, the features and labels from "
                         "the memory-mapped store (page cache), and the memory check models the batch; evaluation "
                         "runs on batches that cover every vertex once (induced subgraphs) instead of the whole graph")


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's default in its help, but a flag's: ``--no-verify``'s default is its variable's (True,
    checksums verified), which "(default: True)" beside "skip the block checksum" would say backwards."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.nargs == 0 and isinstance(action.const, bool):  # store_true / store_false
            return action.help
        return super()._get_help_string(action)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="shgcn-train", formatter_class=_HelpFormatter,
                                description="Distributed GCN training (full-batch or mini-batch) on a shgcn store. "
                                            "Run with 'mpirun -n P' where P is the store's number of parts (times --replication "
                                            "with --algorithm 1.5d; its square with --algorithm 2d).")
    p.add_argument("--version", action="version", version=f"shgcn {_version()}")
    p.add_argument("store", metavar="STORE", help="store built by 'pipeline build' with --parts equal to the ranks")
    p.add_argument("--epochs", type=int, default=200, help="epochs to train")
    p.add_argument("--lr", type=float, default=0.01, help="Adam learning rate")
    p.add_argument("--weight-decay", type=float, default=5e-4, help="L2 on the first layer's weights")
    p.add_argument("--hidden", type=_hidden, default=(16,), help="hidden widths, e.g. 16 or 128,128")
    p.add_argument("--dropout", type=float, default=0.5, help="dropout rate of every layer's input")
    _model_options(p)
    p.add_argument("--seed", type=int, default=0, help="seed of weights, dropout and batches")
    p.add_argument("--log", help="write the JSON-lines run log here (rank 0)")
    p.add_argument("--checkpoint", metavar="DIR", help="save weights and optimizer state in DIR")
    p.add_argument("--checkpoint-every", type=int, default=50, help="epochs between checkpoints")
    p.add_argument("--resume", action="store_true", help="continue from DIR/checkpoint.npz (it must exist)")
    p.add_argument("--eval-every", type=int, default=1, help="evaluate val/test every N epochs")
    p.add_argument("--no-verify", dest="verify", action="store_false",
                   help="skip the block checksum (bounds are still checked; without it the checksum is verified)")
    p.add_argument("--debug-every", type=int, default=0, help="check every N epochs that weights agree on all ranks")
    p.add_argument("--quiet", action="store_true", help="no banner, progress lines or final summary")
    p.add_argument("--overwrite", "--overwrite-log", dest="overwrite", action="store_true",
                   help="replace an existing --log file and the checkpoint in --checkpoint DIR (only a run log or a "
                        "checkpoint this trainer wrote is replaced; --resume continues them instead)")
    p.add_argument("--timeout", type=float, default=1800.0,
                   help="seconds without progress on any rank (a stopped or hung rank) before every rank stops "
                        "with a line naming it; 0: never")
    _grid_options(p)
    _minibatch_options(p)
    p.add_argument("--fail-at", type=_fail_at, default=None, help=argparse.SUPPRESS)  # RANK:EPOCH, for tests
    return p


def _unless_a_plugin_fails(step):
    """``step()``; None, after one line on rank 0, when a plugin fails, clashes or lacks an implementation."""
    from shgcn.core.plugins import PluginError

    try:
        return step()
    except PluginError as e:
        if launcher_rank() == 0:
            print(f"shgcn-train: error: {e}", file=sys.stderr, flush=True)
        return None


def _implemented() -> bool:
    """Every part a plugin registered has its implementation (checked after --help: the parts import kernels)."""
    from .flags import implemented

    implemented()
    return True


def main(argv: list[str] | None = None) -> int:
    given = threads_option(sys.argv[1:] if argv is None else argv)
    problem = thread_env_problem(skip=THREAD_VARS if given else ())  # a valid --threads replaces them all
    if problem:  # before numba or BLAS read them (numba raises on 0, segfaults on 100000)
        if launcher_rank() == 0:
            print(f"shgcn-train: error: {problem}", file=sys.stderr, flush=True)
        return 2
    threads = share_cores(given)
    crowded = affinity_warning(threads)
    if crowded and launcher_rank() == 0:
        print(f"shgcn-train: warning: {crowded}", file=sys.stderr, flush=True)
    p = _unless_a_plugin_fails(parser)  # the registries load the plugins: their parts' names and flags
    if p is None:
        return 2
    args = p.parse_args(argv)
    if not _unless_a_plugin_fails(_implemented):
        return 2
    if args.threads is None:  # the default; a bad --threads (0) stays for the options' check to report
        args.threads = threads
    if args.ranks_per_node == 0:  # under srun: the nodes as Slurm laid the ranks out
        from .slurm import layout_ranks_per_node

        args.ranks_per_node = layout_ranks_per_node(os.environ)
    from shgcn.core.malloc import return_freed_memory

    return_freed_memory()  # this process is the rank's: its setup's freed arrays go back to the system at once
    if args.memory_limit is None:
        from .config import default_memory_limit

        args.memory_limit = default_memory_limit()
    from . import mpicheck

    try:  # mpi4py's MPI against the launcher's: a mismatch is named here, not as a wrong rank count later
        comm = mpicheck.start()
    except mpicheck.MPIMismatch as e:
        from .watchdog import say

        if e.speaks:
            say(f"shgcn-train: error: {e}")
        return 2
    from . import watchdog
    from .config import TrainConfig

    if comm.rank != 0:
        # Ctrl-C reaches every rank (the launcher forwards it); rank 0 alone turns it into the job's one line
        # and its end (exit 130), so a rank that sees it first cannot end the job before rank 0 has said so
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    options = part_options(args)  # the parts' own flags, by dest
    cfg = TrainConfig(**vars(args), options=options, cores=os.cpu_count(), local_ranks=local_ranks(),
                      given=given_minibatch_options(p, argv))
    dog = watchdog.start(comm, cfg.timeout if math.isfinite(cfg.timeout) else 0)
    try:
        return _run(cfg, comm)
    finally:
        if dog is not None:
            dog.stop()


def _run(cfg, comm) -> int:
    from shgcn.core.errors import UserError
    from shgcn.core.malloc import reuse_freed_memory

    from .algorithms import connect
    from .context import Context, Local, prepare
    from .loop import Diverged, train
    from .outputs import check_outputs
    from .summary import print_start
    from .values import check_block, train_count
    from .watchdog import say

    local: Local | None = None
    ctx: Context | None = None
    err: str | None = None
    count = 0
    try:
        cfg.check()
        cfg.check_ranks(comm.size)
        check_outputs(cfg, comm.rank)  # the log's and the checkpoint's directories, before any work
        local = prepare(cfg, comm)
        check_block(local)  # whatever --no-verify says
        count = train_count(local)
    except UserError as e:
        err = str(e)
    except BaseException as e:  # noqa: BLE001 - any failure must end the whole job, not hang it
        return _abort(comm, e)
    # one collective after the purely local setup: a rank that failed (say,
    # its block is corrupt) is reported by rank 0 and every rank exits 2
    errors = _gathered(comm, err, count, cfg.store)
    if any(errors) or local is None:
        if comm.rank == 0:
            first = next(e for e in errors if e)
            who = [r for r, e in enumerate(errors) if e]
            where = "" if len(who) == comm.size else f" (rank {', '.join(map(str, who))})"
            say(f"shgcn-train: error{where}: {first}")
        return 2
    try:  # collective: every rank decides from the same allgathered data, so a refusal is the same everywhere
        ctx = connect(local, comm)
    except UserError as e:
        if comm.rank == 0:
            say(f"shgcn-train: error: {e}")
        return 2
    except BaseException as e:  # noqa: BLE001
        return _abort(comm, e)
    print_start(ctx, comm.rank, cfg.quiet)
    if not cfg.out_of_core:  # out of core, a rank's anonymous memory is the point: freed arrays go back at once
        reuse_freed_memory()  # setup's freed arrays went back to the system (main); the steps reuse their pages
    try:
        train(ctx, comm)
    except Diverged as e:  # the same on every rank: no abort needed
        if comm.rank == 0:
            say(f"shgcn-train: error: {e}")
        return 1
    except BaseException as e:  # noqa: BLE001
        return _abort(comm, e)
    return 0


def _gathered(comm, err: str | None, count: int, store: str) -> list[str | None]:
    """Every rank's error (collective), and, when none failed, the job's refusal when no rank holds a labelled
    training vertex (the same answer on every rank)."""
    from .values import no_training_vertex

    gathered = comm.allgather((err, count))
    errors = [e for e, _ in gathered]
    if not any(errors) and not sum(c for _, c in gathered):
        errors = [no_training_vertex(store)] * comm.size
    return errors


def _abort(comm, e: BaseException) -> int:
    """Report this rank's failure and bring the whole job down: exit 130 for
    an interrupt (only rank 0 takes Ctrl-C: :func:`main`), 2 for a user
    error found during training (a full disk under ``--log``), else 1."""
    from shgcn.core.errors import UserError

    if isinstance(e, KeyboardInterrupt) or isinstance(e.__context__, KeyboardInterrupt):
        # (Ctrl-C inside a compiled kernel reaches Python as numba's SystemError with the interrupt as context)
        code, text = 130, "interrupted; the run stopped (a --checkpoint DIR keeps what it last wrote)"
    elif isinstance(e, UserError):
        code, text = 2, f"error: {e}"
    else:
        code, text = 1, f"{type(e).__name__}: {e}"
    who = "" if comm.size == 1 or code == 130 else f"rank {comm.rank}: "
    from .watchdog import abort_job, say

    say(f"shgcn-train: {who}{text}")  # one whole line, even when several ranks fail at once
    if comm.size > 1:
        abort_job(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
