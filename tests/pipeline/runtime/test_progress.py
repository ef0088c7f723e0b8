"""A stage's progress bar (pipeline/runtime/progress.py): its name and step, the tasks done, the spinner."""

import io

from shgcn.pipeline.runtime.progress import SPINNER, StageBar, label


def test_label_names_the_stage_and_its_step():
    assert label("partition", "hp") == "partition: hp"
    assert label("partition", "partition: hp") == "partition: hp"
    assert label("ingest", "") == "ingest"


def test_the_bar_shows_step_tasks_and_a_turning_spinner():
    out = io.StringIO()
    bar = StageBar("ingest", file=out)
    bar.show(1, 4, "vertex ids")
    first = out.getvalue()
    assert "ingest: vertex ids" in first and "1/4 tasks" in first and f"running {SPINNER[1]}" in first
    bar.show(1, 4, "vertex ids")
    assert f"running {SPINNER[2]}" in out.getvalue()[len(first):]  # redrawn: the spinner turned
    bar.close(4, 4, "row blocks")
    last = out.getvalue().rstrip().rsplit("\r", 1)[-1]
    assert "ingest: row blocks" in last and "4/4 tasks" in last and "running" not in last
