"""Do other libraries' own loaders read what shgcn exports?

- ``dgl_roundtrip``: the DistDGL export loaded by ``dgl.distributed.load_partition`` in an environment where
  DGL's CPU build loads (made by the script), ``to_dgl`` and ``build(dgl_graph)`` checked against the store.
"""
