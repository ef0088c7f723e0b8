"""benchmarks/build/stage_bytes.py: a build record's per-stage peaks as bytes a nonzero of Â."""

import sys

from helpers import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.build import stage_bytes as sb  # noqa: E402

B = "client+scheduler+worker (one process)"


def record():
    nnz = 2**20  # 1 MiB a stage peak of 1 MiB: one byte a nonzero
    stages = {"ingest": {B: 58.0}, "normalize": {B: 56.0}, "partition": {"child gp": 67.0, B: 80.0},
              "place": {B: 69.0}, "quality": {B: 99.0}, "layout": {B: 76.0}, "write": {B: 83.0}}
    return {"tag": "base-rmat20", "tree_peak_bytes": 136 * 2**20,
            "info": {"nnz": nnz, "peak_rss_mib_by_stage": stages}}


def test_a_row_gives_each_stage_the_build_and_the_child_and_the_largest_sum():
    row = sb.row(record())
    assert row["partition"] == "80 + 67 = 147"  # the build first, the child last
    assert (row["ingest"], row["write"]) == ("58", "83")
    assert row["at once"] == "**147**" and row["sampled tree"] == "**136**"
    assert row["nnz"] == "1,048,576"


def test_the_table_shows_the_stages_asked_for_and_the_gib():
    text = sb.render([record()], ("partition", "write"))
    head = text.splitlines()[0]
    assert head == "| run | nnz | partition | write | at once | sampled tree |"
    assert "| base-rmat20 | 1,048,576 | 80 + 67 = 147 | 83 | **147** | **136** |" in text
    assert "base-rmat20: at once 0.14 GiB, sampled tree 0.13 GiB" in text


def test_a_stage_the_record_lacks_is_empty():
    rec = record()
    del rec["info"]["peak_rss_mib_by_stage"]["place"]
    assert sb.row(rec)["place"] == ""


def test_with_the_build_beside_the_child_the_partition_stage_is_the_larger_of_before_and_beside_plus_child():
    rec = record()
    rec["info"]["peak_rss_mib_while_partitioning"] = {"partition": {B: 5.0}}
    rec |= {"partial_peak_bytes": 3 * 2**30, "store_bytes": 2**30, "wall": 12.4}
    row = sb.row(rec)
    assert row["partition"] == "80; 5 + 67 = 80"  # the build before the child (80) against 5 + 67
    assert row["at once"] == "**99**"  # the quality stage, now the largest
    assert "disk at its peak 3.00 GiB (the store 1.00 GiB); 12 s" in sb.render([rec])
