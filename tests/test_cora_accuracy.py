"""Cora with the Planetoid split: Kipf & Welling report 81.5% test accuracy."""

import numpy as np
import pytest
from helpers.mpi import read_log, train

from shgcn.pipeline.compose import BuildConfig, build

pytestmark = [pytest.mark.mpi, pytest.mark.dataset, pytest.mark.slow]


@pytest.mark.parametrize("ranks", [1, 4])
def test_cora_mean_test_accuracy_over_five_seeds(shared_data, client, tmp_path, ranks):
    path = tmp_path / f"cora-p{ranks}.zarr"
    build(BuildConfig(source="cora", out=str(path), parts=ranks, models=("hp",), data_dir=str(shared_data)), client,
          echo=lambda *a: None)
    accs = []
    for seed in range(5):
        log = tmp_path / f"run{seed}.jsonl"
        res = train(ranks, path, "--epochs", 200, "--hidden", 16, "--dropout", 0.5, "--lr", 0.01,
                    "--weight-decay", 5e-4, "--seed", seed, "--eval-every", 200, log=log, use_mpirun=ranks > 1)
        assert res.returncode == 0, res.stderr
        accs.append(read_log(log)[1][-1].test_acc)
    assert np.mean(accs) >= 0.80, accs
