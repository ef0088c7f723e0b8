"""``pipeline export``: a store's partition for other tools: DistDGL's
partition layout (:mod:`.distdgl`), plain assignment files
(:mod:`.assignment`), and the graph a partitioner sees, for one that runs
elsewhere (:mod:`.graph`)."""
