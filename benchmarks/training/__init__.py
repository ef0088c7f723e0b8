"""How fast and how accurate is the trainer, what does it send, which SpMM
algorithm wins, and does the epoch model predict it?

- ``trainer_bench``: epoch time at P = 1, 2, 4, bytes of p2p and bcast, PyG's GCNConv;
- ``arch_bench``: the P=1 epoch against a plain numpy epoch, P=2 over P=1, every architecture against PyG,
  accuracy per architecture and with a bfloat16 exchange;
- ``accuracy``: Cora test accuracy over 5 seeds (full batch and mini-batch);
- ``minibatch_bench``: mini-batch bytes per step against the prediction, epoch time, where a step's time goes;
- ``algo_bench``: 1D against 1.5D and 2D: measured bytes, predicted epochs;
- ``pingpong``: MPI latency and bandwidth (the ``shm`` and ``this`` machine presets' paths; run under ``mpirun -n 2``);
- ``simulate_bench``: the epoch model's compute fit and its validation at P = 1 and 2;
- ``_phases``, ``_pyg_epoch``, ``_reference_epoch``: run by the above in child processes.

Nothing is imported at package import: ``_phases`` sets the trainer's thread counts before numpy loads.
"""
