"""The compute seam: every local kernel of a training step goes through a
:class:`Backend`, passed explicitly (the context holds the rank's one; no
global), so a device backend (torch, CuPy) is one class that passes
``BackendTests``.

What a backend does: sparse and dense products, array creation and the
few array functions the layers need (their elementwise work between the
products: sums with a bias and ReLU, ReLU's gradient, column sums, dots,
concatenation; kernels over the backend's threads), the activation fused with dropout and
its gradient (counter-based masks: the same mask for a vertex whatever rank
holds it), GAT's attention and its backward, the losses, the optimizer step
and the host transfers around the exchange (the exchange moves host arrays
only: ``to_host`` before sending, ``from_host`` on received rows).

Arrays a backend returns are its own (numpy arrays for :class:`NumpyBackend`);
the layers use only their operators (``+``, ``*``, slicing, ``.sum``,
``.reshape``, ``.T``) and the backend's methods on them.

Each backend's declaration, a :class:`BackendSpec` (its name, devices and
own options: :data:`NUMPY`, :data:`TORCH`), is here too, where both its
class and its maker (the package's ``BACKENDS``) refer to it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar, cast

import numpy as np

from shgcn.core.errors import UserError
from shgcn.core.options import Option

if TYPE_CHECKING:
    import scipy.sparse as sp

ACTS = ("none", "relu", "elu")
_F = TypeVar("_F", bound=Callable[..., Any])


class BackendError(UserError):
    """A backend that cannot run here (its optional library is missing, or the device); exit code 2."""


@dataclass(frozen=True)
class BackendSpec:
    """A backend's declaration: its name and description (``--backend``), the devices it runs on
    (``--device``, checked with the options before any library loads) and its own options."""

    name: str
    description: str
    devices: tuple[str, ...] = ("cpu",)
    options: tuple[Option, ...] = ()


# the torch backend's own options (its constructor's ``compile`` and ``kernels``)
TORCH_COMPILE = Option("--torch-compile", "auto", "torch: compile the mask kernels with torch.compile (auto: on a GPU, "
                       "or as SHGCN_TORCH_COMPILE says; a compile takes tens of seconds of a short CPU run)",
                       choices=("auto", "on", "off"))
TORCH_KERNELS = Option("--torch-kernels", "auto", "torch: the masks', attention's and losses' kernels: torch "
                       "operations (what a GPU runs), or numba's on the tensors' memory (auto: numba on the CPU, "
                       "torch on a GPU); losses are the same", choices=("auto", "torch", "numba"))

# the built-in backends' specs, each name written once (here): their classes and makers refer to these
NUMPY = BackendSpec("numpy", "numpy, scipy and numba kernels")
TORCH = BackendSpec("torch", "PyTorch tensors on the CPU or a GPU (torch is an optional dependency)",
                    devices=("cpu", "cuda"), options=(TORCH_COMPILE, TORCH_KERNELS))


def timed_on_host(kernel: str) -> Callable[[_F], _F]:
    """Add a method's seconds to ``self.kernel_time[kernel]`` (the run log's time per kernel; ~1 µs a call)."""
    def wrap(f: _F) -> _F:
        @functools.wraps(f)
        def timed(self, *args, **kwargs):
            t0 = time.perf_counter()
            try:
                return f(self, *args, **kwargs)
            finally:
                self.kernel_time[kernel] = self.kernel_time.get(kernel, 0.0) + time.perf_counter() - t0
        return cast(_F, timed)
    return wrap


@dataclass(frozen=True)
class Noise:
    """What a training step's random masks are keyed by: ``rate`` (feature
    dropout) and ``attn_rate`` (attention dropout), the ``seed`` and the
    ``epoch`` key (the batch number in mini-batch mode). ``None`` in place of
    a Noise: evaluation, no dropout."""

    rate: float
    seed: int
    epoch: int
    attn_rate: float = 0.0

    def threshold(self, rate: float) -> int:
        """The 16-bit draw below which a unit is dropped (0: none)."""
        return min(int(round(rate * 65536)), 65535)

    def scale(self, rate: float) -> float:
        """1 / P(keep), exactly for the quantized rate."""
        t = self.threshold(rate)
        return 65536.0 / (65536 - t)

    def key(self) -> np.ndarray:
        s = int(self.seed) & (2**64 - 1)
        return np.array([s & 0xFFFFFFFF, s >> 32], np.uint64)

    def ctr(self, layer: int, stream: int) -> np.ndarray:
        return np.array([self.epoch & 0xFFFFFFFF, (layer & 0xFF) | (stream << 8)], np.uint64)


class Dropped(NamedTuple):
    """A first-layer input whose dropout is already applied (made ahead of
    its step, while the previous step's allreduce completes)."""

    x: Any


@dataclass
class Attention:
    """One GAT layer's attention over a rank's rows (the forward's inputs and what its backward reuses).

    Attributes
    ----------
    csr : (n_own, n_own + R) Â's pattern in local columns (self loops included)
    z : (n_own + R, H d) Z = H W of own rows, then received ones
    s_src, s_dst : (n_own + R, H) and (n_own, H) every head's two scores
    slope : LeakyReLU's negative slope
    rgid, cgid : (n_own,) and (n_own + R,) original ids of the rows and columns (the attention masks' keys)
    noise, layer : the masks' key (None: no dropout)
    alpha, alpha_d : (nnz, H) the coefficients and their dropped copies (written by the forward)
    out : (n_own, H d) the aggregation (written by the forward)
    """

    csr: sp.csr_matrix
    z: Any
    s_src: Any
    s_dst: Any
    slope: float
    rgid: np.ndarray
    cgid: np.ndarray
    noise: Noise | None
    layer: int
    alpha: Any = None
    alpha_d: Any = None
    out: Any = None


@dataclass
class AdamState:
    """Adam's state for a list of float32 parameters (updated in place by :meth:`Backend.adam_step`)."""

    params: list[Any]
    lr: float
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    m: list[Any] = field(default_factory=list)
    v: list[Any] = field(default_factory=list)
    t: int = 0


class Backend(Protocol):
    """The local kernels of a training step (see the module docstring)."""

    name: str

    # products
    def spmm(self, m: sp.csr_matrix, x: Any) -> Any: ...
    def gemm(self, a: Any, b: Any) -> Any: ...
    def gemm_tn(self, a: Any, b: Any) -> Any: ...

    # arrays
    def asarray(self, x: Any) -> Any: ...
    def empty(self, shape: tuple[int, ...]) -> Any: ...
    def zeros(self, shape: tuple[int, ...]) -> Any: ...
    def dense(self, h: Any) -> Any: ...

    # the layers' elementwise work between the products (timed as ``elementwise``)
    def concat(self, arrays: list[Any], axis: int) -> Any: ...

    def add(self, a: Any, b: Any = None, *, alpha: Any = 1.0, bias: Any = None, relu: bool = False,
            out: Any = None) -> Any:
        """``relu?(a + alpha * b + bias)``: a and b (n, d), alpha a number (or the backend's 0-d array), bias
        (d,) added to every row, ReLU when ``relu``; b and bias optional. Into ``out`` (n, d) when given (a or b
        itself, or a view of neither), else a new array. The numpy backend's bits are numpy's expression's
        ``np.maximum(a + alpha * b + bias, 0)`` at every T."""
        ...

    def relu(self, x: Any) -> Any:
        """(n, d) ``max(x, 0)``, a new array."""
        ...

    def relu_grad(self, g: Any, a: Any) -> Any:
        """In place: ``g *= a > 0``: g (n, d) the gradient at a ReLU's output, a (n, d) that output (or its
        input); returns g (the gradient at its input)."""
        ...

    def colsum(self, x: Any) -> Any:
        """(d,) the column sums of x (n, d) (numpy backend: ``x.sum(0)``'s bits)."""
        ...

    def vdot(self, a: Any, b: Any) -> Any:
        """(1,) the sum of ``a * b`` over all entries of a and b (n, d) (numpy backend: ``np.vdot``'s bits)."""
        ...

    # elementwise work and dropout
    def act_dropout(self, h: Any, act: str, noise: Noise | None, layer: int, gids: np.ndarray,
                    keep: bool = False) -> tuple[Any, Any]: ...
    def act_dropout_grad(self, g: Any, hd: Any, act: str, noise: Noise | None, keep: Any) -> Any: ...

    # attention
    def gat_forward(self, rows: np.ndarray, att: Attention) -> None: ...
    def gat_backward(self, att: Attention, g: Any) -> tuple[Any, Any, Any]: ...

    # losses: (loss sum, its gradient over `total` (zero outside idx), correct rows); the sums and counts may be
    # the backend's 0-d arrays (a device's): host_values reads them, once a step
    def softmax_xent(self, logits: Any, labels: Any, idx: np.ndarray, w: np.ndarray, total: int
                     ) -> tuple[float, Any, int]: ...
    def sigmoid_bce(self, logits: Any, labels: Any, idx: np.ndarray, w: np.ndarray, total: int
                    ) -> tuple[float, Any]: ...

    def host_values(self, values: list[Any]) -> np.ndarray: ...

    # optimizer
    def adam_step(self, state: AdamState, grads: list[Any]) -> None: ...

    # host transfers
    def to_host(self, x: Any) -> np.ndarray: ...
    def host_rows(self, x: Any) -> Any: ...  # own rows for an exchange: x[rows] a host array of those rows
    def from_host(self, x: np.ndarray) -> Any: ...
