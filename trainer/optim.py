"""The optimizer: Adam on the model's parameters, its step through the backend."""

from __future__ import annotations

from typing import Any

import numpy as np

from .backends import AdamState, Backend


class Adam:
    """Adam on a list of float32 arrays (the model's ``params``), updated in place by ``backend.adam_step``.

    ``state()`` and ``load()`` are what a checkpoint keeps (host arrays)."""

    def __init__(self, params: list[Any], lr: float, backend: Backend, b1: float = 0.9, b2: float = 0.999,
                 eps: float = 1e-8):
        self.be = backend
        self.s = AdamState(params, lr, b1, b2, eps, [backend.zeros(p.shape) for p in params],
                           [backend.zeros(p.shape) for p in params])

    @property
    def params(self) -> list[Any]:
        return self.s.params

    def step(self, grads: list[Any]) -> None:
        self.be.adam_step(self.s, grads)

    def state(self) -> dict[str, np.ndarray]:
        out = {"t": np.array(self.s.t)}
        for i, (m, v) in enumerate(zip(self.s.m, self.s.v)):
            out[f"m{i}"], out[f"v{i}"] = self.be.to_host(m), self.be.to_host(v)
        return out

    def load(self, state) -> None:
        self.s.t = int(state["t"])
        for i in range(len(self.s.m)):
            self.s.m[i][...] = self.be.from_host(state[f"m{i}"])
            self.s.v[i][...] = self.be.from_host(state[f"v{i}"])
