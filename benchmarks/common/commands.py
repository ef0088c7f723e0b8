"""Every command in benchmarks/RESULTS.md runs from the repository: a check.

    python -m benchmarks.common.commands [--results FILE]

A command is a code span or a fenced code block that starts (after ``NAME=value`` settings) with a program:
``python``, ``mpirun``, ``pipeline``, ``shgcn-train``, ``/usr/bin/time``, a path to a Python interpreter or a
script. The index's command column and each section's ``- command`` line are commands by that rule, and so are
the commands quoted in hand-written notes (a benchmark may be named there by its module's last part,
``plan_check --one 24 ...``). A command fails the check when

- it names an absolute path (an argument, ``--opt=/path`` or ``NAME=/path``) other than the system's own
  (:data:`SYSTEM`: ``/usr/bin/time``, ``/proc/self/...``): a script or a directory of the machine it ran on;
- it runs ``python -m MODULE`` and MODULE (or, for a package, its ``__main__``) is not in the repository or the
  environment;
- it runs ``python FILE`` and FILE is not in the repository (a name of before the benchmarks were grouped,
  ``python benchmarks/NAME.py``, is one: the message names its module).

Anywhere in the file, a script (a path ending in ``.py`` or ``.sh``) outside the repository fails too, command or
prose: figures made by a script nobody has cannot be made again. Directories of the machine the figures were
made on may be named in prose (where records were kept), not in a command. Placeholders (``DIR``, ``OUT``,
``STORE``) are fine. Exit status 1 and one line per problem when anything fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common.results import MODULES, RESULTS
from benchmarks.common.runs import REPO

SYSTEM = ("/usr/bin/", "/bin/", "/proc/", "/dev/", "/sys/")  # the system's own paths: on every Linux machine
PROGRAMS = ("python", "python3", "mpirun", "mpiexec", "pipeline", "shgcn-train", "shgcn-pipeline", "torchrun",
            "time", "/usr/bin/time", "bash", "sh")
_SPAN = re.compile(r"`([^`]+)`")  # a code span (a double backtick is read as two single ones)
_FENCE = re.compile(r"^\s*(```|~~~)")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# a benchmark named by its module's last part, as notes shorten it (``plan_check --one 24 ...``)
SHORT = frozenset(p.stem for p in (REPO / "benchmarks").glob("*/*.py") if not p.stem.startswith("_"))
_SCRIPT = re.compile(r"(?<![\w.~-])(/(?:[\w.+\-\[\]]+/)*[\w.+\-\[\]]+\.(?:py|sh))\b")


@dataclass(frozen=True)
class Problem:
    line: int  # 1-based line of RESULTS.md
    command: str
    why: str

    def __str__(self) -> str:
        return f"RESULTS.md:{self.line}: {self.why}: {self.command}"


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote in a shortened command
        return text.split()


def _program(words: list[str]) -> int | None:
    """The index of the program among a command's words (after ``NAME=value`` settings), or None when the words
    are not a command."""
    k = 0
    while k < len(words) and _ENV.match(words[k]):
        k += 1
    if k == len(words):
        return None
    w = words[k]
    if w in PROGRAMS or w in SHORT or re.search(r"/python3?$|/bin/\w+$", w) or (w.startswith("/") and w.endswith((".py", ".sh"))):
        return k
    return None


def _blocks(text: str):
    """(first line, text) of the places a command may be: each line of a fenced block, each table row, and each
    paragraph (consecutive lines up to a blank one, joined: a code span may go on over a line break)."""
    fenced, para, start = False, [], 0
    for n, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or not line.strip() or line.lstrip().startswith("|"):
            if para:
                yield start, "\n".join(para)
                para = []
            if fenced:
                yield n, "`" + line.strip() + "`"  # a fenced line: one command, as if in a code span
            elif line.strip():
                yield n, line
            continue
        if not para:
            start = n
        para.append(line)
    if para:
        yield start, "\n".join(para)


def commands(text: str) -> list[tuple[int, str]]:
    """(line, command) of every command in ``text``: the code spans (and the lines of fenced blocks) that start
    with a program."""
    out = []
    for first, block in _blocks(text):
        for m in _SPAN.finditer(block):
            span = " ".join(m[1].split())
            if _program(_words(span)) is not None:
                out.append((first + block.count("\n", 0, m.start()), span))
    return out


def _module_exists(name: str) -> bool:
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    try:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations is not None:  # a package runs its __main__
            spec = importlib.util.find_spec(name + ".__main__")
    except (ImportError, ValueError):
        return False
    return spec is not None


def _outside(path: str) -> bool:
    """An absolute path that is not the system's own (the repository's own absolute path counts as outside:
    it is the path of one machine)."""
    return path.startswith("/") and not path.startswith(SYSTEM)


def check_command(cmd: str) -> list[str]:
    """Why ``cmd`` cannot run from the repository (empty: it can)."""
    why = []
    words = _words(cmd)
    for w in words:
        for part in (w, w.split("=", 1)[1] if "=" in w else ""):
            for p in part.split(":"):  # PYTHONPATH=/a:/b
                if _outside(p):
                    why.append(f"names {p}, outside the repository")
    mapped = _words(cmd)
    k = _program(mapped)
    while k is not None and k < len(mapped):
        prog = mapped[k]
        if prog in ("mpirun", "mpiexec", "torchrun"):  # its options, then the program it starts
            k += 1
            while k < len(mapped) and mapped[k].startswith("-"):
                k += 2 if mapped[k] in ("-n", "-np", "--nproc-per-node", "--nproc_per_node") else 1
            continue
        if prog in ("time", "/usr/bin/time"):
            k += 1
            while k < len(mapped) and mapped[k].startswith("-"):
                k += 1
            continue
        if re.search(r"(^|/)python3?$", prog):
            rest = mapped[k + 1:]
            if rest[:1] == ["-m"] and len(rest) > 1:
                if "<" not in rest[1] and not _module_exists(rest[1]):  # benchmarks.<group>.<script>: a pattern
                    why.append(f"module {rest[1]} does not exist")
            elif rest and rest[0].endswith(".py") and not rest[0].startswith("/"):
                if not (REPO / rest[0]).is_file():
                    flat = re.fullmatch(r"benchmarks/(\w+)\.py", rest[0])
                    now = f" (now python -m {MODULES[flat[1]]})" if flat and flat[1] in MODULES else ""
                    why.append(f"script {rest[0]} is not in the repository{now}")
        elif prog.endswith((".py", ".sh")) and not prog.startswith("/") and not (REPO / prog).is_file():
            why.append(f"script {prog} is not in the repository")
        break
    return list(dict.fromkeys(why))


def check(text: str) -> list[Problem]:
    """Every problem of the commands in ``text`` (RESULTS.md's), and every script outside the repository
    that its prose names."""
    problems = [Problem(n, cmd, why) for n, cmd in commands(text) for why in check_command(cmd)]
    seen = {(p.line, p.command) for p in problems}
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
        for m in _SCRIPT.finditer(line):
            if _outside(m[1]) and not any(n == ln and m[1] in c for ln, c in seen):
                problems.append(Problem(n, m[1], "a script outside the repository"))
    return sorted(problems, key=lambda p: p.line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=RESULTS, help="the file to check (default benchmarks/RESULTS.md)")
    args = ap.parse_args()
    text = args.results.read_text()
    problems = check(text)
    for p in problems:
        print(p)
    n = len(commands(text))
    print(f"{n} commands, {len({(p.line, p.command) for p in problems})} that do not run from the repository")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
