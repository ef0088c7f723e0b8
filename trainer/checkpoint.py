"""Checkpoints: weights, Adam state and the epoch, written atomically by rank 0.

A checkpoint records what it belongs to (the store's checksums, the
architecture and the model's dimensions) and the training options; resuming
with a different store, another architecture or different options is
refused in one line with the difference named.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import numpy as np

from .archs.base import Model
from .config import TrainConfig, TrainError
from .optim import Adam

FILE = "checkpoint.npz"


def path(cfg: TrainConfig) -> Path:
    return Path(cfg.checkpoint or ".") / FILE


def save(cfg: TrainConfig, epoch: int, model: Model, opt: Adam, identity: dict) -> None:
    """Write the state after ``epoch`` (rename into place: never half-written)."""
    p = path(cfg)
    made = [d for d in (p.parent, *p.parent.parents) if not d.exists()]  # removed again if nothing is written
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TrainError(f"--checkpoint {cfg.checkpoint}: cannot make the directory ({e.strerror or e})") from None
    tmp = p.with_name(f".{p.stem}.tmp-{os.getpid()}.npz")
    arrays: dict[str, np.ndarray] = {f"w{i}": opt.be.to_host(w) for i, w in enumerate(model.params)}
    arrays.update(opt.state())
    arrays["epoch"] = np.array(epoch)
    arrays["identity"] = np.array(json.dumps(identity, sort_keys=True))
    try:
        np.savez(tmp, **arrays)  # type: ignore[arg-type]
        os.replace(tmp, p)
    except BaseException as e:  # a full disk, Ctrl-C: the last whole checkpoint stays, no partial file beside it
        with contextlib.suppress(OSError):
            tmp.unlink()
        for d in made:  # the directories this save made, deepest first, when they are empty
            with contextlib.suppress(OSError):
                d.rmdir()
        if isinstance(e, OSError):  # the user's disk or directory (exit 2), named
            raise TrainError(f"--checkpoint {cfg.checkpoint}: cannot write {p} ({e.strerror or e}); the last "
                             "checkpoint written, if any, is kept") from None
        raise


def load(cfg: TrainConfig, model: Model, opt: Adam, identity: dict) -> int:
    """Restore weights and Adam state; returns the first epoch to run."""
    p = path(cfg)
    if not p.exists():
        raise TrainError(f"{p}: no checkpoint to resume from (drop --resume to start from scratch)")
    try:
        with np.load(p, allow_pickle=False) as z:
            saved = json.loads(str(z["identity"]))
            _same(p, saved, identity)
            for i, w in enumerate(model.params):
                if f"w{i}" not in z.files:
                    raise TrainError(f"{p}: the checkpoint has {i} parameter arrays, the model more")
                if z[f"w{i}"].shape != tuple(w.shape):
                    raise TrainError(f"{p}: weight {i} has shape {z[f'w{i}'].shape}, expected {tuple(w.shape)}")
                w[...] = opt.be.from_host(z[f"w{i}"])
            opt.load(z)
            return int(z["epoch"]) + 1
    except (OSError, KeyError, ValueError) as e:
        raise TrainError(f"{p}: unreadable checkpoint ({e})") from None


def _same(p: Path, saved: dict, now: dict) -> None:
    if saved.get("store") != now["store"]:
        raise TrainError(f"{p}: checkpoint is from a different store (its checksums differ)")
    was = saved.get("arch", "gcn")  # checkpoints before --arch were GCNs
    if was != now["arch"]:
        raise TrainError(f"{p}: the checkpoint holds a {was} model, not {now['arch']} "
                         f"(resume with --arch {was}, or train the {now['arch']} in another directory)")
    saved = {"arch": was, "exchange_dtype": "float32", **saved}
    diff = [f"{k} {saved.get(k)!r} -> {now.get(k)!r}" for k in sorted(set(saved) | set(now))
            if k != "store" and saved.get(k) != now.get(k)]
    if diff:
        raise TrainError(f"{p}: the checkpoint was trained with other options: {'; '.join(diff)}")
