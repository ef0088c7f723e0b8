"""The device run (issue 60): everything a GPU machine without network or package access needs, prepared on a
machine that has them, then measured there in one call, then reported here.

    python -m benchmarks.device prepare DIR [--dry-run]     # wheels, stores, run.sh into DIR (at most 60 MiB)
    bash DIR/run.sh [--dry-run] [--budget 480]               # on the GPU machine: JSONs under $OUT
    python -m benchmarks.device report OUT/*.json            # RESULTS.md sections, the docs' figures

The run's parts, in this order under one budget (:mod:`.driver`): the GPU (:mod:`.gpu`: the torch backend on
CUDA against PyG, losses against numpy's, two ranks on one GPU, torchdist over NCCL, a profile), the CPU node
(:mod:`.cpu`: the threads sweep, every P x T split, each rank's affinity, the threads model's fit), and the
network calibration (``benchmarks.training.net_calibration`` at 16 ranks, when the checkout has it). Each
part rewrites its JSON after every measurement, so a run cut short keeps what it measured. ``--dry-run`` is the
same run on a CPU with tiny sizes: the CI runs prepare, run.sh and report so (tests/benchmarks/test_device.py).
"""
