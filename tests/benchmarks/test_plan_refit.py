"""benchmarks/build/plan_refit.py: records found in the first directory that has them; the kept parts of the
previous coefficients replace the fitted ones, and the source says so."""

import json
import sys

from helpers import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.build import plan_refit as pr  # noqa: E402


def test_records_come_from_the_first_directory_that_has_them(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x.json").write_text(json.dumps({"tag": "x", "from": "a"}))
    (b / "x.json").write_text(json.dumps({"tag": "x", "from": "b"}))
    (b / "y.json").write_text(json.dumps({"tag": "y", "from": "b"}))
    got = pr.load([a, b], ["x", "y", "z"])
    assert {t: r["from"] for t, r in got.items()} == {"x": "a", "y": "b"}


def test_kept_parts_replace_the_fitted_ones(monkeypatch):
    fitted = {"memory": {"m": 1}, "child": {"gp": 2}, "beside": {}, "disk": {}, "seconds": {"s": 3},
              "source": "python -m benchmarks.build.plan_refit on 2 builds"}
    monkeypatch.setattr(pr, "fit", lambda recs: dict(fitted))
    previous = {"memory": {"m": 9}, "child": {"gp": 8}, "seconds": {"s": 7}, "source": "the fit before"}
    got = pr.refit({}, previous, ("child", "seconds"))
    assert got["memory"] == {"m": 1} and got["child"] == {"gp": 8} and got["seconds"] == {"s": 7}
    assert got["source"].endswith("; child and seconds kept from the previous fit (the fit before)")
    assert pr.refit({}, previous, ())["source"] == fitted["source"]
