"""The banner names the training mode; the summary names the best validation
epoch, the test score there, the final loss and the run log."""

from shgcn.core import runlog
from shgcn.trainer import summary


def _epoch(e, loss, val=None, test=None):
    return runlog.Epoch(epoch=e, loss=loss, train_acc=0.5, val_acc=val, test_acc=test)


def test_banner_names_the_mode_and_the_threads():
    full = summary.banner("1d", summary.mode_text("full"), 4, 1, ("1 GiB", "4 GiB"))
    assert full == "1d, full-batch on 4 ranks; memory (modelled): up to 1 GiB a rank, 4 GiB in all"
    assert summary.banner("1d", "full-batch", 4, 1, ("1 GiB", "4 GiB"), 1) == \
        "1d, full-batch on 4 ranks of 1 thread; memory (modelled): up to 1 GiB a rank, 4 GiB in all"
    assert summary.banner("2d", "full-batch", 2, 2, ("1 GiB", "4 GiB"), 3).startswith("2d, full-batch on 2 x 2 ranks of 3 "
                                                                                      "threads; memory")
    mini = summary.mode_text("minibatch", "node", 1024)
    assert mini == "mini-batch (node sampler, batch size 1,024)"
    assert summary.banner("1d", mini, 2, 1, ("1", "2")).startswith("1d, mini-batch (node sampler, batch size 1,024) on 2")


def test_banner_names_the_nodes_as_ranks_per_node_lays_them_out():
    """The quickstart's --ranks-per-node 2 on 4 ranks: 2 nodes of 2 (not "4 x 1")."""
    assert summary.banner("1d", "full-batch", 4, 1, ("1", "2"), 1, nodes=[2, 2]).startswith(
        "1d, full-batch on 4 ranks (2 nodes of 2) of 1 thread; ")
    assert summary.banner("1d", "full-batch", 1, 1, ("1", "2"), nodes=[1]).startswith("1d, full-batch on 1 rank (1 node);")
    assert summary.node_text([2, 2, 1]) == "3 nodes of 2, 2, 1 ranks"


def test_the_settings_line_names_what_changes_the_losses():
    line = summary.settings("hp", "row", 5e-4, summary.decayed_text([0], 4), "p2p")
    assert line == ("trains on: partition hp (the store's layout model, --layout-model at build); features "
                    "row-normalized (the store's --feature-norm row; plain PyG's are not); weight decay 0.0005 on the "
                    "first layer's weights only (as Kipf & Welling's GCN); exchange p2p")
    assert "no weight decay; " in summary.settings("rp", "none", 0.0, "", "node")
    assert summary.decayed_text([0, 2], 4) == "2 of the 4 parameter arrays (indices 0, 2)"


def test_the_summary_shows_the_bytes_sent_against_the_prediction():
    rec = runlog.Epoch(epoch=0, loss=1.0, train_acc=0.5, bytes_sent=[3000, 2000])
    assert "; sent 4.9 KiB (5,000 bytes) per epoch as predicted" in summary.summary([rec], epochs=1, predicted=5000)
    assert "; sent 4.9 KiB (5,000 bytes) per epoch (predicted 4,000)" in summary.summary([rec], epochs=1, predicted=4000)
    assert summary.summary([rec], epochs=1).endswith("; sent 4.9 KiB (5,000 bytes) per epoch")


def test_summary_takes_the_earliest_best_validation_epoch():
    recs = [_epoch(0, 1.5, 0.4, 0.35), _epoch(1, 1.0, 0.7, 0.66), _epoch(2, 0.9), _epoch(3, 0.8, 0.7, 0.6)]
    line = summary.summary(recs, epochs=4, log="run.jsonl")
    assert line == ("summary: best validation accuracy 0.7000 at epoch 2/4 (test accuracy there 0.6600); "
                    "final loss 0.8000; run log: run.jsonl")


def test_summary_without_a_test_or_validation_set():
    recs = [_epoch(0, 1.5, 0.4, 0.0), _epoch(1, 1.25, 0.5, 0.0)]
    assert summary.summary(recs, epochs=2, has_test=False) == \
        "summary: best validation accuracy 0.5000 at epoch 2/2; final loss 1.2500"
    assert summary.summary(recs, epochs=2, metric="micro-F1", has_val=False) == \
        "summary: test micro-F1 0.0000 at epoch 2/2 (no validation vertices); final loss 1.2500"
    assert summary.summary([], epochs=2) is None


def test_summary_shows_the_busiest_ranks_peak_against_its_model():
    rec = _epoch(0, 1.0)
    rec.peak_memory = [300 * 2**20, 512 * 2**20]
    line = summary.summary([rec], epochs=1, modelled=(100 * 2**20, 384 * 2**20))
    assert line == ("summary: final loss 1.0000; peak memory 512.0 MiB at rank 1 (modelled 384.0 MiB for the matrix, "
                    "features, activations and exchanged rows, 128.0 MiB beyond it: the model leaves out the interpreter and "
                    "its libraries)")
    assert summary.memory_part([2**30], (3 * 2**30,)) == (
        "peak memory 1.0 GiB at rank 0 (modelled 3.0 GiB for the matrix, features, activations and exchanged rows, 2.0 GiB "
        "below it)")
    assert summary.memory_part([2**30, 2**29], ()) == "peak memory 1.0 GiB at rank 0"
