import threading

import numpy as np
import pytest
import scipy.sparse as sp

from shgcn.pipeline.models import Inputs, PartitionConfig, default_options
from shgcn.pipeline.models.run import run
from shgcn.pipeline.runtime.child import kill_children


def test_records_time_and_the_childs_memory(sbm_graph):
    a, _ = sbm_graph
    res = run("hp", Inputs(a.shape[0], a), PartitionConfig(parts=2, seed=1))
    assert res.model == "hp" and res.seconds > 0 and res.peak_rss_mib > 0
    assert res.part.dtype == np.int32


@pytest.mark.timeout(120)
def test_a_killed_child_is_an_error_not_a_hang(sbm_graph):
    a, _ = sbm_graph
    big = sp.block_diag([a] * 40, format="csr")
    timer = threading.Timer(0.8, kill_children)
    timer.start()
    try:
        with pytest.raises(RuntimeError, match="killed by signal SIGKILL"):
            run("hp", Inputs(big.shape[0], big),
                PartitionConfig(parts=8, seed=5, options={**default_options(), "hp_preset": "mtkahypar-deterministic"}))
    finally:
        timer.cancel()
