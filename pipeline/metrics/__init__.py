"""What a partition costs: the column-net hypergraph model and its
connectivity (:mod:`.hypergraph`), the full-batch volume and load of one SpMM
(:mod:`.volume`), and the volume of mini-batches (:mod:`.batches`). Pure
functions on arrays, used by the models and by the quality stage."""
