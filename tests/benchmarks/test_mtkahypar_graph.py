"""benchmarks/build/mtkahypar_graph.py: Mt-KaHyPar's graph partition of a METIS file, its phases measured."""

import subprocess
import sys

import pytest
from helpers import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.build import mtkahypar_graph as mg  # noqa: E402

pytest.importorskip("mtkahypar")


def test_two_triangles_joined_by_one_edge_are_cut_once(tmp_path):
    """Vertices 1-3 and 4-6 are triangles, 3-4 joins them: two parts cut that edge alone."""
    path = tmp_path / "g.metis"
    path.write_text("6 7\n2 3\n1 3\n1 2 4\n3 5 6\n4 6\n4 5\n")
    res = subprocess.run([sys.executable, "-c", "import sys; from benchmarks.build import mtkahypar_graph as mg; "
                          f"print(mg.phases({str(path)!r}, 'deterministic', 2, 0.0))"],
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert res.returncode == 0, res.stderr
    got = eval(res.stdout.strip().splitlines()[-1])  # a dict's repr, from the child
    assert got["cut"] == 1 and got["imbalance"] == 0.0
    assert got["load_peak"] > 0 and got["partition_peak"] > 0


def test_the_line_gives_bytes_a_nonzero():
    got = {"load_peak": 10.0, "partition_peak": 20.0, "load_s": 1.0, "partition_s": 2.0, "cut": 1234, "imbalance": 0.01}
    assert mg.line(got, 20 * 2**20).endswith("edge cut 1,234; imbalance 0.0100; 1.0 B/nnz of Â")
