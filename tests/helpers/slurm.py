"""A real single-node Slurm for the tests: munged, slurmctld and slurmd from the operating system's packages
(Debian's ``slurm-wlm munge``), configured for this machine's CPUs and memory under a temporary directory
(``SLURM_CONF`` points there; nothing under /etc is read or written), started by :func:`start_slurm` and
stopped by :meth:`Slurm.stop`. :func:`missing` says in one line why it cannot run here (not root, no daemons)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "sinfo")


def _find(name: str) -> str | None:
    return shutil.which(name) or next((str(p) for p in (Path("/usr/sbin") / name,) if p.exists()), None)


def missing() -> str | None:
    """Why no Slurm can start here (one line), or None."""
    absent = [d for d in DAEMONS if _find(d) is None]
    if absent:
        return f"no Slurm here ({', '.join(absent)} absent: apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "the test Slurm runs its daemons as root (slurmd starts jobs as their user); not root here"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _memory_mib() -> int:
    """This machine's memory in MiB (a little less: slurmd refuses a node that claims more than it has)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024 * 9 // 10
    return 1024


def config(root: Path, node: str, munge_socket: Path) -> str:
    """slurm.conf for one node (``node``: this machine's short hostname) of this machine's CPUs and memory,
    its daemons as root, its state, spool, pid and log files under ``root``."""
    cpus = os.cpu_count() or 1
    lines = [
        "ClusterName=shgcntest", f"SlurmctldHost={node}(127.0.0.1)", f"SlurmctldPort={_free_port()}",
        f"SlurmdPort={_free_port()}", "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge",
        f"AuthInfo=socket={munge_socket}", "CredType=cred/munge", f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool", f"SlurmctldPidFile={root}/slurmctld.pid", f"SlurmdPidFile={root}/slurmd.pid",
        f"SlurmctldLogFile={root}/slurmctld.log", f"SlurmdLogFile={root}/slurmd.log", "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none", "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU", "MpiDefault=none",
        "SwitchType=switch/none", "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
        "ReturnToService=2", "SlurmctldTimeout=30", "SlurmdTimeout=30", "InactiveLimit=0", "MinJobAge=300",
        "KillWait=5", "Waittime=0", "SchedulerType=sched/backfill", "SlurmdParameters=config_overrides",
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={_memory_mib()} State=UNKNOWN",
        "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4",
    ]
    return "\n".join(lines) + "\n"


@dataclass
class Slurm:
    """A running test Slurm: its directory, configuration, the environment that reaches it, its daemons."""

    root: Path
    conf: Path
    node: str
    procs: list[subprocess.Popen] = field(default_factory=list)

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        env["SLURM_CONF"] = str(self.conf)
        return env

    def run(self, args: list[str], timeout: float = 60, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(args, env=kw.pop("env", None) or self.env(), capture_output=True, text=True,
                              timeout=timeout, **kw)

    def sbatch_wait(self, args: list[str], timeout: float = 180, **kw) -> subprocess.CompletedProcess:
        """``sbatch --wait ARGS`` (its exit status is the job's)."""
        return self.run(["sbatch", "--wait", *args], timeout=timeout, **kw)

    def logs(self) -> str:
        return "\n".join(f"== {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(self.root.glob("*.log")))

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)


def _die_with_parent() -> None:
    """In the daemon's child process before it runs: the kernel sends it SIGTERM when the test process dies (a
    pytest killed mid-run left its Slurm running, holding the ports)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _daemon(args: list[str], env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=_die_with_parent)


def _munge(root: Path) -> tuple[subprocess.Popen, Path]:
    """munged in the foreground, with its own key and socket under ``root``."""
    d = root / "munge"
    d.mkdir(mode=0o700)
    key = d / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    sock = d / "munge.socket"
    p = _daemon([_find("munged") or "munged", "-F", "--force", f"--key-file={key}", f"--socket={sock}",
                 f"--pid-file={d / 'munged.pid'}", f"--log-file={root / 'munged.log'}", f"--seed-file={d / 'munged.seed'}"])
    _wait(lambda: sock.exists(), 20, "munged did not open its socket", p)
    return p, sock


def _wait(ready, timeout: float, what: str, proc: subprocess.Popen | None = None) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if ready():
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} (exited {proc.returncode})")
        time.sleep(0.3)
    raise RuntimeError(what)


def start_slurm(root: Path, timeout: float = 60) -> Slurm:
    """Start munged, slurmctld and slurmd under ``root`` and wait until the node is idle."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    for d in ("state", "spool"):
        (root / d).mkdir()
    node = socket.gethostname().split(".")[0]
    s = Slurm(root, root / "slurm.conf", node)
    try:
        munged, sock = _munge(root)
        s.procs.append(munged)
        s.conf.write_text(config(root, node, sock))
        env = s.env()
        s.procs.append(_daemon([_find("slurmctld") or "slurmctld", "-D", "-i", "-f", str(s.conf)], env))
        s.procs.append(_daemon([_find("slurmd") or "slurmd", "-D", "-f", str(s.conf), "-N", node], env))
        _wait(lambda: _idle(s), timeout, "the test Slurm's node did not become idle")
    except RuntimeError as e:
        s.stop()
        raise RuntimeError(f"{e}\n{s.logs()}") from None
    except BaseException:
        s.stop()
        raise
    return s


def _idle(s: Slurm) -> bool:
    try:
        out = s.run(["sinfo", "-h", "-N", "-o", "%T"], timeout=10).stdout
    except subprocess.TimeoutExpired:
        return False
    return out.strip() == "idle"
