"""Partition models behind one protocol (:class:`.base.Partitioner`).

=========  ===============================================================
``rp``     random rows (:mod:`.rp`): the baseline
``gp``     METIS on the symmetrized graph (:mod:`.gp`)
``hp``     Mt-KaHyPar on the column-net hypergraph of Â (:mod:`.hp`)
``shp``    the stochastic hypergraph model for mini-batches (:mod:`.shp`)
``*-vb``   a base partition refined for max send and receive volume (:mod:`.vb`)
=========  ===============================================================

:mod:`.registry` lists them; :mod:`.run` runs one (in a child process when
it holds the GIL). The descriptions import nothing heavy; each model's
implementation is imported when it runs.
"""

from .base import Assignment, Inputs, Option, PartitionConfig, Partitioner, PartitionResult
from .registry import DEFAULT_ALL, REGISTRY, build_order, default_options, get, model_names, options, reads_graph_file

__all__ = ["DEFAULT_ALL", "REGISTRY", "Assignment", "Inputs", "Option", "PartitionConfig", "PartitionResult",
           "Partitioner", "build_order", "default_options", "get", "model_names", "options", "reads_graph_file"]
