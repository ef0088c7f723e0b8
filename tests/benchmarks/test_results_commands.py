"""Every command in benchmarks/RESULTS.md runs from the repository (issue 50): benchmarks/common/commands.py's
check, on the file itself and on texts it must refuse."""

import subprocess
import sys

from helpers import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.common import commands as cm  # noqa: E402
from benchmarks.common.results import RESULTS  # noqa: E402


def whys(text: str) -> list[str]:
    return [p.why for p in cm.check(text)]


def test_every_command_in_results_runs_from_the_repository():
    text = RESULTS.read_text()
    assert len(cm.commands(text)) > 100  # the parser found the commands (index, sections, notes, appendix)
    assert [str(p) for p in cm.check(text)] == []


def test_the_check_runs_as_a_module_and_its_exit_status_says_so(tmp_path):
    bad = tmp_path / "RESULTS.md"
    bad.write_text("- command: `PYTHONPATH=. python /work/s23/measure.py 23 TAG`\n")
    run = subprocess.run([sys.executable, "-m", "benchmarks.common.commands", "--results", str(bad)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert "RESULTS.md:1: names /work/s23/measure.py, outside the repository" in run.stdout
    bad.write_text("- command: `python -m benchmarks.training.thread_bench --rounds 3 --stores DIR`\n")
    run = subprocess.run([sys.executable, "-m", "benchmarks.common.commands", "--results", str(bad)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout


def test_a_script_or_directory_outside_the_repository_fails():
    assert whys("- command: `PYTHONPATH=. python /work/kmeas/lim.py rmat23 23 --memory-limit 4.6G`") == [
        "names /work/kmeas/lim.py, outside the repository"]
    assert whys("`python -m benchmarks.training.thread_bench --stores /tmp/thr`") == [
        "names /tmp/thr, outside the repository"]
    assert whys("`python -m benchmarks.build.plan_check --records=/root/recs`") == [
        "names /root/recs, outside the repository"]
    assert whys("```\nPYTHONPATH=/work/wt /work/venv/bin/python -m benchmarks.build.plan_check\n```") == [
        "names /work/wt, outside the repository", "names /work/venv/bin/python, outside the repository"]
    assert whys(f"`python {REPO}/benchmarks/training/pingpong.py`") != []  # the repository's own path: one machine's


def test_a_module_or_script_that_does_not_exist_fails():
    assert whys("| q | s | `python -m benchmarks.training.no_such_bench --x 1` | 2026 |") == [
        "module benchmarks.training.no_such_bench does not exist"]
    assert whys("`mpirun -n 2 python -m benchmarks.nothing`") == ["module benchmarks.nothing does not exist"]
    assert whys("`python benchmarks/no_such_script.py`") == ["script benchmarks/no_such_script.py is not in the "
                                                             "repository"]
    assert whys("`python -m shgcn.no_such_module`") == ["module shgcn.no_such_module does not exist"]
    # a name of before the benchmarks were grouped: not a file any more
    assert whys("`mpirun -n 2 python benchmarks/pingpong.py`") == [
        "script benchmarks/pingpong.py is not in the repository (now python -m benchmarks.training.pingpong)"]


def test_a_command_over_a_line_break_and_a_script_in_prose_are_seen():
    text = "Built with `python -m benchmarks.build.plan_check --one 24\n--records /work/s24b/stores` by hand.\n"
    assert [(p.line, p.why) for p in cm.check(text)] == [(1, "names /work/s24b/stores, outside the repository")]
    text = "The refit ran by a script beside the records, /work/refit/fit.py, then by hand.\n"
    assert [(p.line, p.why) for p in cm.check(text)] == [(1, "a script outside the repository")]
    assert whys("`plan_check --one 23 --records /work/kmeas`") == ["names /work/kmeas, outside the repository"]


def test_placeholders_system_paths_and_recorded_flat_names_pass():
    ok = ["`python -m benchmarks.build.plan_check --one S --tag TAG --records DIR`",
          "`/usr/bin/time -v pipeline build rmat:scale=22,edge_factor=16,seed=1 --out OUT`",
          "`python -m benchmarks.<group>.<script>`",
          "`python -m benchmarks.training._phases OUT.json --epochs 3`",
          "`python examples/torch_pyg.py`",  # a script in the repository
          "`mpirun -n 8 python -m benchmarks.training.pingpong --oversubscribed`",
          "`mpirun -n 2 python -m shgcn.trainer STORE --epochs 3`",
          "(`/proc/self/clear_refs` 5 around prepare)",
          "the records in DIR = /work/plan2-runs/stores (this machine)",  # a directory in prose: where it was
          "`pipeline/refine.py volume_balance`"]  # a file named in prose, not a command
    for text in ok:
        assert cm.check(text) == [], text


def test_a_section_writes_its_machine_paths_as_their_placeholders(tmp_path, monkeypatch):
    from benchmarks.common import results

    where = str(tmp_path / "stores")
    monkeypatch.setattr(sys, "argv", ["billion.py", "--dir", where, "--steps", "2"])
    monkeypatch.setattr(results, "running_module", lambda: "benchmarks.build.billion")
    monkeypatch.setattr(results, "RESULTS", tmp_path / "RESULTS.md")
    monkeypatch.setattr(results, "versions", lambda: "v")
    results.write_section("A title", f"the plan's disk fits on {where}.\n", {where: "DIR"})
    text = (tmp_path / "RESULTS.md").read_text()
    assert "- command: `python -m benchmarks.build.billion --dir DIR --steps 2`" in text
    assert "fits on DIR." in text and where not in text and [str(p) for p in cm.check(text)] == []
