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


def test_slopes_refit_the_bytes_a_nonzero_of_the_terms_named_and_keep_the_rest():
    mib = 2**20

    def rec(nnz, ingest_mib, beside_mib):
        return {"info": {"nnz": nnz, "n": 100, "feature_dim": 10,
                         "peak_rss_mib_by_stage": {"ingest": {"client+scheduler+worker (one process)": ingest_mib}},
                         "peak_rss_mib_while_partitioning": {"partition": {"client": beside_mib}}}}

    previous = {"memory": {"ingest": {"base": mib, "nnz": 30.0, "feature": 1.0}, "write": {"base": 0, "nnz": 5.0}},
                "beside": {"gp": {"base": 0.0, "nnz": 4.0, "feature": 0.0}}, "source": "before"}
    # ingest: (measured - 1 MiB - 1 B x 1,000 values) / nnz = 10 and 12; beside: 2 and 2
    recs = {"a": rec(mib, (mib + 1000 + 10 * mib) / mib, 2), "b": rec(2 * mib, (mib + 1000 + 24 * mib) / mib, 4)}
    got = pr.slopes(recs, previous, ["ingest", "beside:gp"])
    assert abs(got["memory"]["ingest"]["nnz"] - 11.0) < 1e-9 and got["memory"]["ingest"]["base"] == mib
    assert abs(got["beside"]["gp"]["nnz"] - 2.0) < 1e-9
    assert got["memory"]["write"] == {"base": 0, "nnz": 5.0} and previous["memory"]["ingest"]["nnz"] == 30.0
    assert got["source"].startswith("before; then the rate a nonzero (bytes or seconds) of ingest, beside:gp "
                                    "refitted on a, b")
    lined = pr.slopes(recs, previous, ["ingest"], line=True)["memory"]["ingest"]  # through (1, 11) and (2, 25) MiB
    assert abs(lined["nnz"] - 14.0) < 1e-6 and abs(lined["base"] + 3 * mib) < 1e-3 * mib


def test_slopes_refit_a_stages_seconds_from_the_stores_timings():
    recs = {"a": {"info": {"nnz": 1000, "n": 10, "feature_dim": 0, "timings": {"partition": 12.0, "quality": 3.0}}},
            "b": {"info": {"nnz": 2000, "n": 20, "feature_dim": 0, "timings": {"partition": 18.0, "quality": 5.0}}}}
    previous = {"seconds": {"partition:gp": {"base": 2.0, "nnz": 1.0, "feature": 0.0},
                            "quality": {"base": 1.0, "nnz": 1.0, "feature": 0.0}}, "memory": {}, "source": "s"}
    got = pr.slopes(recs, previous, ["seconds:partition:gp", "seconds:quality"])["seconds"]
    assert abs(got["partition:gp"]["nnz"] - (10 / 1000 + 16 / 2000) / 2) < 1e-12 and got["partition:gp"]["base"] == 2.0
    assert abs(got["quality"]["nnz"] - 0.002) < 1e-12  # (3 - 1) / 1000 and (5 - 1) / 2000
