"""How much communication does each partition model save, how fast do the
partitioners get there, and does a better partition make a faster epoch?

- ``quality_table``: rp / gp / hp quality on four real graphs (the paper's Table 2 shape);
- ``vb_quality``: rp, gp, hp and the volume-balanced gp-vb, hp-vb at p = 16..512 on every shared graph;
- ``hp_speed``: every partitioner against METIS in one run (volume and time);
- ``hp_start``: which KaMinPar preset starts hp's connectivity refinement best, in CPU time;
- ``balance_sim``: ``pipeline simulate`` of every model against rp at P = 16..512;
- ``partition_scale``: whole builds of R-MAT graphs at scale 20-23, each stage's time and memory.
"""
