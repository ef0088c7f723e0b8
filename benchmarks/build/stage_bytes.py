"""The build's memory stage by stage in bytes a nonzero of Â, from build
records (issue 32: "The build's memory per nonzero, stage by stage").

    python -m benchmarks.build.plan_check --one S --tag TAG --records DIR   # a record: DIR/TAG.json
    python -m benchmarks.build.stage_bytes DIR TAG [TAG ...] [--stages partition quality write]
        [--write TITLE [--notes FILE]]

A record is ``benchmarks.build.plan_check``'s (``--one``, ``--fit``, the check) or
``benchmarks.build.checked_build``'s. Each stage cell: the sum over the build's processes of their peak resident
memory in the stage (the store's ``peak_rss_mib_by_stage``: each process's high-water mark, reset when the stage
starts) over Â's nonzeros; in the partition stage ``build; beside + child = at once``: the build's process at its
peak (writing the graph file, before the child starts), then the build's process while the child runs plus the
child, and the larger of the two (``build + child = sum`` for a record without the figure beside the child).
``at once``: the largest stage (as ``benchmarks.build.plan_check`` measures it).
``sampled tree``: the largest sum of the resident memory of the build's whole process tree, sampled every
0.25 s, over Â's nonzeros. Printed: the table (Markdown), then each record's at once and sampled tree in GiB, then
each record's partial store at its peak (the store and its temporary area) and its wall time. ``--write TITLE``: the
same as RESULTS.md's section TITLE, with the text of ``--notes FILE`` (read by hand) after it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.build.plan_check import STAGES, _beside, measured_held
from benchmarks.common import table, write_section

MIB = 2**20


def stage_sums(rec: dict) -> dict[str, list[float]]:
    """Per stage the peaks (bytes) of its processes, the build's first, the partitioner's child (``child ...``)
    last."""
    by_stage = rec["info"]["peak_rss_mib_by_stage"]
    out = {}
    for s in STAGES:
        procs = by_stage.get(s, {})
        order = sorted(procs, key=lambda p: p.startswith("child"))
        out[s] = [procs[p] * MIB for p in order]
    return out


def row(rec: dict, stages: tuple[str, ...] = STAGES) -> dict:
    nnz = float(rec["info"]["nnz"])
    sums = stage_sums(rec)
    out = {"run": rec["tag"], "nnz": f"{int(nnz):,}"}
    beside = _beside(rec)
    for s in stages:
        parts = [round(b / nnz) for b in sums[s]]
        total = round(sum(sums[s]) / nnz)
        out[s] = f"{' + '.join(map(str, parts))} = {total}" if len(parts) > 1 else (f"{total}" if parts else "")
        if s == "partition" and beside is not None and len(parts) > 1:  # the build before the child; beside it + the child
            out[s] = f"{parts[0]}; {round(beside / nnz)} + {' + '.join(map(str, parts[1:]))} = " \
                     f"{round(measured_held(rec, s) / nnz)}"
    at_once = max(measured_held(rec, s) for s in sums)
    out["at once"] = f"**{round(at_once / nnz)}**"
    out["sampled tree"] = f"**{round(rec['tree_peak_bytes'] / nnz)}**"
    out["_gib"] = (at_once / 2**30, rec["tree_peak_bytes"] / 2**30)
    return out


def render(recs: list[dict], stages: tuple[str, ...] = STAGES) -> str:
    rows = [row(r, stages) for r in recs]
    cols = [("run", "run"), ("nnz", "nnz"), *((s, s) for s in stages), ("at once", "at once"),
            ("sampled tree", "sampled tree")]
    gib = "\n".join(f"{r['run']}: at once {r['_gib'][0]:.2f} GiB, sampled tree {r['_gib'][1]:.2f} GiB{_disk(rec)}"
                    for r, rec in zip(rows, recs))
    return table(rows, cols) + "\n" + gib.replace("\n", "  \n") + "\n"


def _disk(rec: dict) -> str:
    """The record's partial store at its peak, the store and the wall time, where it has them."""
    if "partial_peak_bytes" not in rec:
        return ""
    return (f"; disk at its peak {rec['partial_peak_bytes'] / 2**30:.2f} GiB (the store {rec['store_bytes'] / 2**30:.2f}"
            f" GiB); {rec['wall']:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records", type=Path, help="the directory of the records (TAG.json)")
    ap.add_argument("tags", nargs="+", help="the records' names")
    ap.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES), help="the stages shown")
    ap.add_argument("--write", metavar="TITLE", default=None, help="write the table as RESULTS.md's section TITLE")
    ap.add_argument("--notes", type=Path, default=None, help="--write: text (Markdown) after the table")
    args = ap.parse_args()
    recs = [json.loads((args.records / f"{t}.json").read_text()) for t in args.tags]
    text = render(recs, tuple(args.stages))
    if args.write is None:
        print(text, end="")
        return
    notes = args.notes.read_text() if args.notes is not None else ""
    write_section(args.write, text + ("\n" + notes if notes else ""))


if __name__ == "__main__":
    main()
