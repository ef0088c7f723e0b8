"""numba's threads in a rank (trainer/backends/threads.py): the count is capped by the pool, and the layer in
use is named once a parallel kernel ran."""

import numba
import numpy as np

from shgcn.trainer.backends import parallel, threads


def test_set_threads_caps_at_the_pool_and_is_at_least_one():
    pool = numba.config.NUMBA_NUM_THREADS
    try:
        assert threads.set_threads(pool + 5) == pool and numba.get_num_threads() == pool
        assert threads.set_threads(0) == 1 and numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(pool)


def test_the_layer_is_named_after_a_parallel_kernel_ran():
    parallel.relu_dropout_grad(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), 1.0, parallel.even_rows(2, 2))
    assert threads.layer() in ("omp", "tbb", "workqueue")
