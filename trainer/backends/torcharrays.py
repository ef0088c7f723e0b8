"""The torch backend's conversions and array functions (:class:`TorchArrays`, a part of
:class:`.torch.TorchBackend`): host arrays to float32 tensors on the device, array creation, and the
layers' elementwise work between the products (the sums with a bias and ReLU, ReLU's gradient, column sums,
dots, concatenation) as torch operations on the device, timed as the ``elementwise`` kernel. No host kernel
runs here: on a GPU everything stays there, and the values equal the numpy backend's to float32 rounding
(torch's reductions sum in their own order)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from . import torchdevice as dv

_F32 = torch.float32


class TorchArrays:
    """Conversions and array functions on ``self.device`` (see the module docstring)."""

    device: torch.device
    kernel_time: dict[str, float]
    _events: bool
    _pending: list[tuple[str, Any, Any]]

    # --------------------------------------------------------- conversions
    def _t(self, x: Any) -> torch.Tensor:
        """A tensor on the device (host arrays: shared memory on the CPU; float arrays as float32)."""
        if isinstance(x, torch.Tensor):
            return x if x.device == self.device else x.to(self.device)
        a = np.asarray(x)
        if a.dtype.kind == "f" and a.dtype != np.float32:
            a = a.astype(np.float32)
        elif not a.flags.writeable:  # a tensor sharing a read-only array (a store's) could be written through
            a = a.copy()
        return dv.upload(a, self.device)

    def _f32(self, x: Any) -> torch.Tensor:
        return t if (t := self._t(x)).dtype == _F32 else t.to(_F32)

    # --------------------------------------------------------- arrays
    def asarray(self, x: Any) -> Any:
        """A host array as a tensor on the device: float32, or float16 where the host array is (features
        stored as float16 keep half the device memory); CSR features stay scipy CSR (gemm takes them)."""
        if sp.issparse(x):
            return x
        if isinstance(x, np.ndarray) and x.dtype == np.float16:
            return dv.upload(x if x.flags.writeable else x.copy(), self.device)
        return self._t(x)

    def empty(self, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.empty(shape, dtype=_F32, device=self.device)

    def zeros(self, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.zeros(shape, dtype=_F32, device=self.device)

    def dense(self, h: Any) -> Any:
        """A dense float32 tensor of h (CSR first-layer inputs)."""
        if sp.issparse(h):
            return self._t(h.toarray())
        if isinstance(h, torch.Tensor) and h.layout == torch.sparse_csr:
            return h.to_dense()
        return h

    # --------------------------------------------------------- elementwise work between the products
    @dv.timed("elementwise")
    def concat(self, arrays: list[Any], axis: int) -> torch.Tensor:
        return torch.cat([self._f32(a) for a in arrays], dim=axis)

    @dv.timed("elementwise")
    def add(self, a: Any, b: Any = None, *, alpha: Any = 1.0, bias: Any = None, relu: bool = False,
            out: Any = None) -> torch.Tensor:
        """``relu?(a + alpha * b + bias)`` (a, b (n, d); alpha a number or a 0-d tensor, which stays on the
        device; bias (d,)), into ``out`` when given (a or b itself, or a view), else a new tensor."""
        x = self._f32(a)
        if b is not None:
            y = self._f32(b)
            x = x + y if isinstance(alpha, (int, float)) and alpha == 1 else x + y * alpha
        if bias is not None:
            x = x + self._f32(bias)
        if relu:
            x = torch.relu(x)
        if out is not None:
            return out.copy_(x)
        return x.clone() if x is a else x

    @dv.timed("elementwise")
    def relu(self, x: Any) -> torch.Tensor:
        return torch.relu(self._f32(x))

    @dv.timed("elementwise")
    def relu_grad(self, g: Any, a: Any) -> torch.Tensor:
        """In place (on g as float32): ``g *= a > 0``, the gradient at a ReLU's input from ``g`` at its output
        (a: its output or input)."""
        g = self._f32(g)
        return g.mul_(self._f32(a) > 0)

    @dv.timed("elementwise")
    def colsum(self, x: Any) -> torch.Tensor:
        return self._f32(x).sum(0)

    @dv.timed("elementwise")
    def vdot(self, a: Any, b: Any) -> torch.Tensor:
        return torch.dot(self._f32(a).reshape(-1), self._f32(b).reshape(-1)).reshape(1)
