"""The distributed algorithms ``--algorithm`` chooses from (1d, 1.5d, 2d):
one module each, with ``connect(local, comm) -> Context``, found through
their specs in :data:`shgcn.core.algorithms.ALGORITHMS` (``impl``), whose
cost models predict exactly what they count."""
