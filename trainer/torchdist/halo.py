"""The halo exchange as a differentiable torch function over
torch.distributed (:class:`Halo`).

Forward: every rank sends the own rows its neighbours need (the block's
plan) and returns its own rows followed by the received ones, ``(n_own + R,
d)``: the input of an aggregation over the rank's rows of Â. Backward: the
transpose, for any Â (directed or not): the gradient of each received row goes
back to its owner, which adds it into the row it sent (``index_add_``; the sum
order is fixed by the plan, so results do not depend on arrival order).

Messages are point-to-point (``isend``/``irecv``: gloo on the CPU, NCCL on a
GPU, MPI where torch has it), one per neighbour and direction, of exactly the
planned rows; :class:`Traffic` counts them per call, as the trainer does.

The exchange follows its input's device (the block's, for a model on the
block: :meth:`~shgcn.trainer.torchdist.block.TorchBlock.to`): the received
rows are on ``h``'s device. NCCL sends a GPU's rows as they are, all of an
exchange's sends and receives in one batch (NCCL runs a rank's point-to-point
calls in order on one stream: posted one by one, two ranks' receives could
wait on each other); gloo and MPI take them through pinned host buffers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

from .block import HaloPlan
from .launch import stages_through_host

TAG_FORWARD, TAG_BACKWARD = 21, 22


@dataclass
class Traffic:
    """What this rank sent through a :class:`Halo` since the last :meth:`reset`.

    ``calls``: bytes sent by each exchange in order (forward and backward alike), ``directions`` the same
    by direction."""

    bytes_sent: int = 0
    bytes_recv: int = 0
    msgs_sent: int = 0
    calls: list[int] = field(default_factory=list)
    directions: list[str] = field(default_factory=list)

    def reset(self) -> dict:
        out = {"bytes_sent": self.bytes_sent, "bytes_recv": self.bytes_recv, "msgs_sent": self.msgs_sent,
               "calls": list(self.calls), "directions": list(self.directions)}
        self.bytes_sent = self.bytes_recv = self.msgs_sent = 0
        self.calls, self.directions = [], []
        return out


class Halo:
    """The exchange of one rank's halo rows (see the module docstring).

    Parameters
    ----------
    plan : HaloPlan, the rank's (``TorchBlock.plan``)
    group : torch.distributed process group (None: the default one)

    Calling it, ``halo(h)`` with ``h`` (n_own, d) returns (n_own + R, d) on ``h``'s device, differentiable in
    ``h``. There is no device to give: the exchange runs on the input's device (the block's, for a model on the
    block), with the plan's row indices there (copied once and kept, when the plan is on another device).
    """

    def __init__(self, plan: HaloPlan, group: Any = None):
        self.plan, self.group = plan, group
        self.traffic = Traffic()
        self._rows: dict[torch.device, list[torch.Tensor]] = {}
        if plan.size > 1 and not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError("Halo over several ranks needs torch.distributed initialized "
                               "(shgcn.trainer.torchdist.init_from_env)")

    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        if h.shape[0] != self.plan.n_own:
            raise ValueError(f"Halo: {h.shape[0]} rows given, the rank owns {self.plan.n_own}")
        return _HaloFunction.apply(h, self)

    def send_rows(self, device: torch.device) -> list[torch.Tensor]:
        """The plan's send rows (one index tensor per receiver) on ``device``: the plan's own when they are
        there, else copies made once."""
        rows = self._rows.get(device)
        if rows is None:
            rows = self._rows[device] = [r.to(device) for _, r in self.plan.send]
        return rows

    # ------------------------------------------------------------------ the two directions
    def gather(self, h: torch.Tensor) -> torch.Tensor:
        """(R, d) the rows received for ``h`` (n_own, d) (forward), on ``h``'s device."""
        d = h.shape[1]
        out = h.new_empty((self.plan.n_halo, d))
        recvs = [(q, out[s:s + c]) for q, s, c in self.plan.recv]
        sends = [(q, h.index_select(0, rows).contiguous())
                 for (q, _), rows in zip(self.plan.send, self.send_rows(h.device))]
        self._swap(sends, recvs, TAG_FORWARD)
        return out

    def scatter(self, g_halo: torch.Tensor, g_own: torch.Tensor) -> torch.Tensor:
        """``g_own`` (n_own, d) plus the gradients other ranks send back for the rows it sent (backward);
        ``g_halo`` (R, d) the gradient of this rank's received rows, returned to their owners."""
        d = g_own.shape[1]
        sends = [(q, g_halo[s:s + c].contiguous()) for q, s, c in self.plan.recv]
        recvs = [(q, g_own.new_empty((int(rows.numel()), d))) for q, rows in self.plan.send]
        self._swap(sends, recvs, TAG_BACKWARD)
        for rows, (_, part) in zip(self.send_rows(g_own.device), recvs):  # in rank order: a fixed sum order
            g_own.index_add_(0, rows, part)
        return g_own

    def _swap(self, sends: list[tuple[int, torch.Tensor]], recvs: list[tuple[int, torch.Tensor]], tag: int) -> None:
        """Exchange the buffers (every one on the same device) and count what was sent."""
        sends_ = [(q, buf) for q, buf in sends if buf.numel()]
        recvs_ = [(q, buf) for q, buf in recvs if buf.numel()]
        if sends_ or recvs_:
            device = (sends_ or recvs_)[0][1].device
            if stages_through_host(device, self.group):  # a GPU's rows over gloo or MPI
                self._post_staged(sends_, recvs_, tag, device)
            elif device.type == "cpu":
                self._post(sends_, recvs_, tag)
            else:  # a GPU's rows over NCCL
                self._post_batched(sends_, recvs_, tag)
        self._count(sends, recvs, tag)

    def _post(self, sends: list[tuple[int, torch.Tensor]], recvs: list[tuple[int, torch.Tensor]], tag: int) -> None:
        """Post every receive, then every send, and wait for all (no ordering between ranks is assumed)."""
        work = [dist.irecv(buf, src=q, group=self.group, tag=tag) for q, buf in recvs]
        work += [dist.isend(buf, dst=q, group=self.group, tag=tag) for q, buf in sends]
        for w in work:
            if w is not None:  # None only for a rank outside the group
                w.wait()

    def _post_batched(self, sends: list[tuple[int, torch.Tensor]], recvs: list[tuple[int, torch.Tensor]],
                      tag: int) -> None:
        """Device buffers over NCCL: every receive and send in one batch (one NCCL group call), then wait (the
        wait orders the current stream after the transfers; the host goes on)."""
        ops = [dist.P2POp(dist.irecv, buf, q, self.group, tag) for q, buf in recvs]
        ops += [dist.P2POp(dist.isend, buf, q, self.group, tag) for q, buf in sends]
        for w in dist.batch_isend_irecv(ops):
            if w is not None:
                w.wait()

    def _post_staged(self, sends: list[tuple[int, torch.Tensor]], recvs: list[tuple[int, torch.Tensor]], tag: int,
                     device: torch.device) -> None:
        """Device buffers over gloo or MPI: the rows sent are copied into pinned host buffers (every copy
        queued, then one wait for the stream), exchanged, and the rows received copied back to the device."""
        pin = device.type == "cuda"
        host_sends = [(q, torch.empty(buf.shape, dtype=buf.dtype, pin_memory=pin).copy_(buf, non_blocking=pin))
                      for q, buf in sends]
        host_recvs = [(q, torch.empty(buf.shape, dtype=buf.dtype, pin_memory=pin)) for q, buf in recvs]
        if pin and host_sends:
            torch.cuda.current_stream(device).synchronize()  # the rows are on the host before gloo reads them
        self._post(host_sends, host_recvs, tag)
        for (_, buf), (_, host) in zip(recvs, host_recvs):
            buf.copy_(host, non_blocking=pin)  # pinned: the allocator keeps the buffer until the copy ran

    def _count(self, sends: list[tuple[int, torch.Tensor]], recvs: list[tuple[int, torch.Tensor]], tag: int) -> None:
        sent = sum(buf.numel() * buf.element_size() for _, buf in sends)
        self.traffic.bytes_sent += sent
        self.traffic.bytes_recv += sum(buf.numel() * buf.element_size() for _, buf in recvs)
        self.traffic.msgs_sent += sum(1 for _, buf in sends if buf.numel())
        self.traffic.calls.append(sent)
        self.traffic.directions.append("forward" if tag == TAG_FORWARD else "backward")


class _HaloFunction(torch.autograd.Function):
    """``cat(h, received rows)``; its backward is :meth:`Halo.scatter`."""

    @staticmethod
    def forward(ctx: Any, h: torch.Tensor, halo: Halo) -> torch.Tensor:
        ctx.halo = halo
        return torch.cat([h, halo.gather(h.detach())], 0)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None]:
        halo: Halo = ctx.halo
        n = halo.plan.n_own
        return halo.scatter(g[n:], g[:n].clone()), None
