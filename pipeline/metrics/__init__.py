"""What a partition costs: the column-net hypergraph model and its
connectivity (:mod:`.hypergraph`), the full-batch volume and load of one SpMM
(:mod:`.volume`), the volume of mini-batches (:mod:`.batches`), the lower bounds no partition goes
below (:mod:`.bounds`, :mod:`.placement_bound`) and what crosses between nodes (:mod:`.internode`). Pure
functions on arrays, used by the models and by the quality stage."""
