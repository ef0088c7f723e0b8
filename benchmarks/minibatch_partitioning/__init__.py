"""Does the mini-batch partitioner (shp) beat gp and hp on held-out batches,
and how many sampled batches does it need?

- ``shp_bench``: held-out mini-batch volume of shp against gp and hp, every sampler, shp's steps;
- ``shp_batches``: the batches the stochastic hypergraph needs to beat the better of gp and hp.
"""
