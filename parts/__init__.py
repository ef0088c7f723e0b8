"""The extension interfaces: everything a part of your own implements and registers, in one public module.

A plugin (named by ``SHGCN_PLUGINS=module:function`` or an entry point in the group ``shgcn.plugins``; see
:mod:`shgcn.core.plugins`) imports only from here. Its function registers its parts; every registry loads the
plugins on its first lookup, so the parts are choices wherever a name is read: ``shgcn-train``, ``pipeline
build``, ``pipeline simulate``, ``pipeline report`` and the run-log reader, a Dask worker, an MPI rank.

========================  ==============================================  =================================
kind                      implement                                       register
========================  ==============================================  =================================
partition model           :class:`Model` (:class:`Partitioner`)           ``MODELS.register(model)``
graph reader              :class:`Reader` (:class:`TextReader`)           ``READERS.register(reader)``
sampler                   :class:`SamplerSpec` (``draw``)                 ``SAMPLERS.register(spec)``
architecture              :class:`ArchSpec` + a :class:`Layer` and its    ``ARCHS.register(spec, cls)``
                          :class:`Stack` (or a whole :class:`Layers`)
exchange                  :class:`ExchangeCost` + :class:`Exchange`       ``EXCHANGES.register(cost, cls)``
algorithm, backend        :class:`AlgorithmCost`, :class:`BackendSpec`    ``ALGORITHMS``/``BACKENDS.register``
machine (``--machine``)   a :class:`Machine` (``replace`` of a preset)    ``MACHINES.register(machine)``
========================  ==============================================  =================================

A part's options are :class:`Option` s on its spec (``--my-flag``, with its default, bounds and help);
they become flags of the command lines and reach the part's constructor by name. Each kind's conformance
class is in :mod:`shgcn.testing` (a pytest plugin: subclass it in a test file, nothing else).

Names load lazily (importing this module imports nothing heavy): ``shgcn.parts.ARCHS`` imports the trainer's
architectures when first read.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> (module, attribute): where each interface lives
_WHERE: dict[str, tuple[str, str]] = {
    # every kind
    "Option": ("shgcn.core.options", "Option"),
    "Registry": ("shgcn.core.registry", "Registry"),
    "UserError": ("shgcn.core.errors", "UserError"),
    "PluginError": ("shgcn.core.plugins", "PluginError"),
    # partition models (pipeline build --model)
    "MODELS": ("shgcn.pipeline.models.registry", "REGISTRY"),
    "Model": ("shgcn.pipeline.models.base", "Model"),
    "Partitioner": ("shgcn.pipeline.models.base", "Partitioner"),
    "Inputs": ("shgcn.pipeline.models.base", "Inputs"),
    "PartitionConfig": ("shgcn.pipeline.models.base", "PartitionConfig"),
    "Assignment": ("shgcn.pipeline.models.base", "Assignment"),
    "MATRIX": ("shgcn.pipeline.models.base", "MATRIX"),
    "GRAPH": ("shgcn.pipeline.models.base", "GRAPH"),
    "GRAPH_FILE": ("shgcn.pipeline.models.base", "GRAPH_FILE"),
    # graph readers (pipeline build --format)
    "READERS": ("shgcn.pipeline.sources.registry", "READERS"),
    "Reader": ("shgcn.pipeline.sources.base", "Reader"),
    "Recognizes": ("shgcn.pipeline.sources.base", "Recognizes"),
    "TextReader": ("shgcn.pipeline.sources.text", "TextReader"),
    # samplers (--sampler)
    "SAMPLERS": ("shgcn.core.sample", "SAMPLERS"),
    "SamplerSpec": ("shgcn.core.sample", "SamplerSpec"),
    # architectures (--arch): the spec at the bottom, the layers in the trainer
    "ARCHS": ("shgcn.trainer.archs", "ARCHS"),
    "ArchSpec": ("shgcn.core.archs", "ArchSpec"),
    "Layers": ("shgcn.trainer.archs.base", "Layers"),
    "Layer": ("shgcn.trainer.archs.base", "Layer"),
    "Stack": ("shgcn.trainer.archs.base", "Stack"),
    "GCN": ("shgcn.trainer.archs.gcn", "GCN"),
    # exchanges (--exchange): the cost model at the bottom, the exchange in the trainer
    "EXCHANGES": ("shgcn.trainer.exchanges", "EXCHANGES"),
    "ExchangeCost": ("shgcn.core.exchanges.base", "ExchangeCost"),
    "P2PCost": ("shgcn.core.exchanges.flat", "P2P"),
    "Exchange": ("shgcn.trainer.exchanges.base", "Exchange"),
    "P2P": ("shgcn.trainer.exchanges.p2p", "P2P"),
    # algorithms (--algorithm) and backends (--backend)
    "ALGORITHMS": ("shgcn.trainer.algorithms", "ALGORITHMS"),
    "AlgorithmCost": ("shgcn.core.algorithms.base", "AlgorithmCost"),
    "BACKENDS": ("shgcn.trainer.backends", "BACKENDS"),
    "BackendSpec": ("shgcn.trainer.backends", "BackendSpec"),
    "Backend": ("shgcn.trainer.backends.base", "Backend"),
    # machines (pipeline simulate --machine): the epoch model's presets
    "MACHINES": ("shgcn.core.machine", "MACHINES"),
    "Machine": ("shgcn.core.machine", "Machine"),
}

__all__ = ["ALGORITHMS", "ARCHS", "AlgorithmCost", "ArchSpec", "Assignment", "BACKENDS", "Backend", "BackendSpec",
           "EXCHANGES", "Exchange", "ExchangeCost", "GCN", "GRAPH", "GRAPH_FILE", "Inputs", "Layer", "Layers",
           "MACHINES", "MATRIX", "MODELS", "Machine", "Model", "Option", "P2P", "P2PCost", "PartitionConfig",
           "Partitioner", "PluginError", "READERS", "Reader", "Recognizes", "Registry", "SAMPLERS", "SamplerSpec",
           "Stack", "TextReader", "UserError"]  # the names of _WHERE

if TYPE_CHECKING:  # what a type checker and an IDE see: the same names, imported
    from shgcn.core.algorithms.base import AlgorithmCost
    from shgcn.core.archs import ArchSpec
    from shgcn.core.errors import UserError
    from shgcn.core.exchanges.base import ExchangeCost
    from shgcn.core.exchanges.flat import P2P as P2PCost
    from shgcn.core.machine import MACHINES, Machine
    from shgcn.core.options import Option
    from shgcn.core.plugins import PluginError
    from shgcn.core.registry import Registry
    from shgcn.core.sample import SAMPLERS, SamplerSpec
    from shgcn.pipeline.models.base import GRAPH, GRAPH_FILE, MATRIX, Assignment, Inputs, Model, PartitionConfig, Partitioner
    from shgcn.pipeline.models.registry import REGISTRY as MODELS
    from shgcn.pipeline.sources.base import Reader, Recognizes
    from shgcn.pipeline.sources.registry import READERS
    from shgcn.pipeline.sources.text import TextReader
    from shgcn.trainer.algorithms import ALGORITHMS
    from shgcn.trainer.archs import ARCHS
    from shgcn.trainer.archs.base import Layer, Layers, Stack
    from shgcn.trainer.archs.gcn import GCN
    from shgcn.trainer.backends import BACKENDS, BackendSpec
    from shgcn.trainer.backends.base import Backend
    from shgcn.trainer.exchanges import EXCHANGES
    from shgcn.trainer.exchanges.base import Exchange
    from shgcn.trainer.exchanges.p2p import P2P


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'shgcn.parts' has no attribute {name!r}")
    module, attr = _WHERE[name]
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # once
    return value


def __dir__() -> list[str]:
    return __all__
