"""shgcn preprocessing: turn a graph into a partitioned, training-ready store.

The stages live in one module each (``datasets``, ``ingest``, ``normalize``,
``hypergraph``, ``partition``, ``quality``, ``layout``) and are composed by
:func:`pipeline.build.build`, which the ``pipeline`` command runs on Dask.
"""

__version__ = "0.1.0"
