"""What the loss and the score are, chosen by the store's label kind: one
class per vertex (softmax cross-entropy, accuracy) or several (multi-label,
Yelp and Amazon: a sigmoid per class, binary cross-entropy summed over the
classes, micro-F1 as GraphSAINT reports it).

Every kind returns its counts as a small float vector whose sum over ranks
(one allreduce) gives the global score: ``[rows, correct]`` for accuracy,
``[rows, true positives, false positives, false negatives]`` for micro-F1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import masked_cross_entropy


@dataclass(frozen=True)
class SingleLabel:
    """(n,) int32 class ids, -1 unlabelled; softmax cross-entropy; accuracy."""

    metric: str = "accuracy"
    width: int = 2

    def labelled(self, labels: np.ndarray) -> np.ndarray:
        return np.asarray(labels) >= 0

    def loss(self, logits: np.ndarray, labels: np.ndarray, mask: np.ndarray, total: int,
             weights: np.ndarray | None = None) -> tuple[float, np.ndarray, np.ndarray]:
        """Loss sum over masked rows, gradient of it over ``total``, counts."""
        loss, g, correct = masked_cross_entropy(logits, labels, mask, total, weights)
        return loss, g, np.array([np.count_nonzero(mask), correct], np.float64)

    def counts(self, logits: np.ndarray, labels: np.ndarray, mask: np.ndarray) -> np.ndarray:
        idx = np.flatnonzero(mask)
        return np.array([idx.size, np.count_nonzero(logits[idx].argmax(1) == labels[idx])], np.float64)

    def score(self, counts: np.ndarray) -> float:
        return float(counts[1] / max(counts[0], 1))


@dataclass(frozen=True)
class MultiLabel:
    """(n, C) bool targets; a sigmoid per class, binary cross-entropy summed
    over the classes; micro-F1 of the predictions logit > 0."""

    metric: str = "micro-F1"
    width: int = 4

    def labelled(self, labels: np.ndarray) -> np.ndarray:
        return np.ones(np.asarray(labels).shape[0], bool)

    def loss(self, logits: np.ndarray, labels: np.ndarray, mask: np.ndarray, total: int,
             weights: np.ndarray | None = None) -> tuple[float, np.ndarray, np.ndarray]:
        idx = np.flatnonzero(mask)
        z = logits[idx].astype(np.float64)
        y = np.asarray(labels[idx], np.float64)
        w = np.ones(idx.size) if weights is None else np.asarray(weights, np.float64)[idx]
        # log(1 + e^-|z|) + max(z, 0) - z y: the stable form of -[y log s(z) + (1-y) log(1-s(z))]
        per_row = (np.logaddexp(0.0, -np.abs(z)) + np.maximum(z, 0) - z * y).sum(1)
        g = np.zeros_like(logits)
        g[idx] = ((1.0 / (1.0 + np.exp(-z)) - y) * w[:, None] / max(total, 1)).astype(np.float32)
        return float((per_row * w).sum()), g, self.counts(logits, labels, mask)

    def counts(self, logits: np.ndarray, labels: np.ndarray, mask: np.ndarray) -> np.ndarray:
        idx = np.flatnonzero(mask)
        pred, y = logits[idx] > 0, np.asarray(labels[idx], bool)
        return np.array([idx.size, np.count_nonzero(pred & y), np.count_nonzero(pred & ~y),
                         np.count_nonzero(~pred & y)], np.float64)

    def score(self, counts: np.ndarray) -> float:
        tp, fp, fn = counts[1], counts[2], counts[3]
        return float(2 * tp / max(2 * tp + fp + fn, 1))


def for_store(attrs: dict) -> SingleLabel | MultiLabel:
    """The targets of a store with these root attributes (``label_kind``)."""
    return MultiLabel() if attrs.get("label_kind", "single") == "multi" else SingleLabel()
