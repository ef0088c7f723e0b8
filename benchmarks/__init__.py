"""shgcn's benchmarks, grouped by the question each answers; run them from
the repository root as ``python -m benchmarks.<group>.<script>``. Each
writes its section of benchmarks/RESULTS.md (see ``benchmarks.common``).

- ``partitioning``: partition quality and the partitioners' speed, and
  whether a better partition makes a faster epoch;
- ``minibatch_partitioning``: shp against gp and hp on held-out mini-batches;
- ``build``: the build's stages, readers, memory and scale-out;
- ``training``: the trainer's speed, bytes and accuracy, the SpMM
  algorithms, and the epoch model (ping-pong, fit, validation);
- ``interop``: DGL's own loader on the DistDGL export;
- ``common``: what they share.

Nothing here is imported at package import (the trainer's phase timer must
set its thread counts before numpy loads)."""
