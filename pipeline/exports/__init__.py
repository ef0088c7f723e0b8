"""``pipeline export``: a store's partition for other tools: DistDGL's
partition layout (:mod:`.distdgl`) and plain assignment files
(:mod:`.assignment`)."""
