"""benchmarks/build/plan_check.py: ``--one`` builds with the build's own plan check on only when asked."""

import sys

from helpers import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.build import plan_check as pc  # noqa: E402


def test_one_passes_the_plan_check_choice_to_the_build(monkeypatch, tmp_path):
    seen = []

    def measure(tag, source, model, out, extra, parts=64, *, plan_checked=False):
        seen.append((tag, source, model, extra, plan_checked))
        raise SystemExit(0)  # the build's record is not this test's

    monkeypatch.setattr(pc, "measure", measure)
    for argv, checked in ((["--one", "12", "--records", str(tmp_path)], False),
                          (["--one", "12", "--records", str(tmp_path), "--plan-checked", "--tag", "t"], True)):
        monkeypatch.setattr(sys, "argv", ["plan_check.py", *argv])
        try:
            pc.main()
        except SystemExit:
            pass
        assert seen[-1][4] is checked and seen[-1][2] == "gp" and seen[-1][1] == pc.RMAT.format(12)
    assert [s[0] for s in seen] == ["rmat12-gp-p64-one", "t"]
