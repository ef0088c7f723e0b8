"""What the loss and the score are, chosen by the store's label kind: one
class per vertex (softmax cross-entropy, accuracy) or several (multi-label,
Yelp and Amazon: a sigmoid per class, binary cross-entropy summed over the
classes, micro-F1 as GraphSAINT reports it).

Every kind returns its counts as a small float vector whose sum over ranks
(one allreduce) gives the global score: ``[rows, correct]`` for accuracy,
``[rows, true positives, false positives, false negatives]`` for micro-F1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .backends import Backend, backend


def _weights(idx: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """Per masked row: its loss weight (GraphSAINT's loss normalization), or 1."""
    return np.ones(idx.size, np.float64) if weights is None else np.asarray(weights, np.float64)[idx]


class Targets(Protocol):
    """The loss and the score of a store's label kind (:class:`SingleLabel`, :class:`MultiLabel`)."""

    @property
    def metric(self) -> str: ...

    @property
    def width(self) -> int: ...

    def labelled(self, labels: np.ndarray) -> np.ndarray: ...

    def loss(self, logits: Any, labels: np.ndarray, mask: np.ndarray, total: int,
             weights: np.ndarray | None = None) -> tuple[Any, Any, Any]:
        """(the loss sum, its gradient, the counts): the sum and the counts may hold the backend's 0-d arrays
        (a GPU's, read once a step by ``Backend.host_values``)."""

    def counts(self, logits: Any, labels: np.ndarray, mask: np.ndarray) -> np.ndarray: ...

    def score(self, counts: np.ndarray) -> float: ...


@dataclass(frozen=True)
class SingleLabel:
    """(n,) int32 class ids, -1 unlabelled; softmax cross-entropy; accuracy."""

    metric: str = "accuracy"
    width: int = 2
    be: Backend = field(default_factory=backend, compare=False, repr=False)

    def labelled(self, labels: np.ndarray) -> np.ndarray:
        return np.asarray(labels) >= 0

    def loss(self, logits: Any, labels: np.ndarray, mask: np.ndarray, total: int,
             weights: np.ndarray | None = None) -> tuple[Any, Any, list[Any]]:
        """Sum of -log softmax over masked rows (times ``weights`` per row), its gradient over ``total``
        (the global count), and the counts [rows, correct]."""
        idx = np.flatnonzero(mask)
        loss, g, correct = self.be.softmax_xent(logits, labels, idx, _weights(idx, weights), max(total, 1))
        return loss, g, [np.count_nonzero(mask), correct]

    def counts(self, logits: Any, labels: np.ndarray, mask: np.ndarray) -> np.ndarray:
        idx = np.flatnonzero(mask)
        host = self.be.to_host(logits)
        return np.array([idx.size, np.count_nonzero(host[idx].argmax(1) == labels[idx])], np.float64)

    def score(self, counts: np.ndarray) -> float:
        return float(counts[1] / max(counts[0], 1))


@dataclass(frozen=True)
class MultiLabel:
    """(n, C) bool targets; a sigmoid per class, binary cross-entropy summed
    over the classes; micro-F1 of the predictions logit > 0."""

    metric: str = "micro-F1"
    width: int = 4
    be: Backend = field(default_factory=backend, compare=False, repr=False)

    def labelled(self, labels: np.ndarray) -> np.ndarray:
        return np.ones(np.asarray(labels).shape[0], bool)

    def loss(self, logits: Any, labels: np.ndarray, mask: np.ndarray, total: int,
             weights: np.ndarray | None = None) -> tuple[Any, Any, np.ndarray]:
        idx = np.flatnonzero(mask)
        loss, g = self.be.sigmoid_bce(logits, labels, idx, _weights(idx, weights), total)
        return loss, g, self.counts(logits, labels, mask)

    def counts(self, logits: Any, labels: np.ndarray, mask: np.ndarray) -> np.ndarray:
        idx = np.flatnonzero(mask)
        pred, y = self.be.to_host(logits)[idx] > 0, np.asarray(labels[idx], bool)
        return np.array([idx.size, np.count_nonzero(pred & y), np.count_nonzero(pred & ~y),
                         np.count_nonzero(~pred & y)], np.float64)

    def score(self, counts: np.ndarray) -> float:
        tp, fp, fn = counts[1], counts[2], counts[3]
        return float(2 * tp / max(2 * tp + fp + fn, 1))


def for_store(attrs: dict, be: Backend | None = None) -> SingleLabel | MultiLabel:
    """The targets of a store with these root attributes (``label_kind``), computing through ``be``."""
    be = be or backend()
    return MultiLabel(be=be) if attrs.get("label_kind", "single") == "multi" else SingleLabel(be=be)
