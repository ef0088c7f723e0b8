"""shgcn's bottom package: what the store, the pipeline, the trainer and the
report share, none of which knows the store's layout.

- the registries of the trainer's parts, each spec with its cost:
  :mod:`.archs` (GNN architectures), :mod:`.exchanges`, :mod:`.algorithms`,
  and the :class:`~.costs.Job` they describe together (:mod:`.costs`);
- the models of cost and time: :mod:`.partition` (what a partition costs),
  :mod:`.machine` (nodes, paths, links, fitted compute; presets in
  ``machines/*.json``; every figure checked by :mod:`.machine_check`), :mod:`.collectives`, :mod:`.contention` (what a rank's
  messages cost while its node's other ranks send; :mod:`.fluid`, its default model), :mod:`.epoch` (the epoch
  model), :mod:`.profile` (a
  partition given by its ratios to a baseline's volumes and messages), :mod:`.memory`,
  :mod:`.work` (the partitioners' vertex weights);
- :mod:`.sample` (the mini-batch samplers), :mod:`.runlog` (the run log's
  records), :mod:`.tables` (the quality tables as text), :mod:`.csr`,
  :mod:`.registry` and :mod:`.options` (a part's declared options),
  :mod:`.plugins` (the one loader of parts from outside),
  :mod:`.errors` (``UserError``: exit code 2), :mod:`.malloc` (freed arrays
  back to the system at once, in the processes shgcn starts).

Submodules load on first use (``shgcn.core.epoch``); ``dir(shgcn.core)``
lists them.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["algorithms", "archs", "collectives", "contention", "costs", "csr", "epoch", "errors", "exchanges",
           "fluid", "machine", "machine_check", "machine_spec", "malloc", "memory", "options", "partition", "plugins",
           "profile", "registry", "runlog", "sample", "tables", "thread_scaling", "work"]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
