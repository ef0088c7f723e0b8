"""Dropout keyed by vertex id (trainer/torchdist/masks.py): a vertex's mask is the same whatever row holds
it and equals the numpy trainer's for the same seed, epoch and layer; the gradient is g * mask; the module
follows set_epoch and eval(); bad rates are one line; under mpirun the example with dropout 0.5 gives one
process's losses at P = 2 and 4."""

import json
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from helpers import REPO  # noqa: E402
from helpers.mpi import mpirun  # noqa: E402

from shgcn.core.errors import UserError  # noqa: E402
from shgcn.trainer.backends import backend  # noqa: E402
from shgcn.trainer.backends.base import Noise  # noqa: E402
from shgcn.trainer.torchdist import Dropout, dropout, set_epoch  # noqa: E402

# float results of two libraries or of one library's CPU paths: .ci/run runs these under every
# ATEN_CPU_CAPABILITY and OPENBLAS_CORETYPE (pytest -m cpu_paths)
pytestmark = pytest.mark.cpu_paths

EXAMPLE = REPO / "examples" / "torch_pyg.py"
# ids past 2**32 too: the counter carries an id's high bits
IDS = np.array([5, 900, 3, 2**33 + 7, 11, 0, 42, 123456], np.int64)


def numpy_mask(ids, width, p, layer, epoch, seed):
    """The numpy trainer's dropout of ones: 0 or 1 / P(keep) per unit."""
    ones = np.ones((len(ids), width), np.float32)
    out, _ = backend("numpy").act_dropout(ones, "none", Noise(rate=p, seed=seed, epoch=epoch), layer, ids)
    return out


@pytest.mark.parametrize("width,p,layer,epoch,seed", [(13, 0.5, 2, 3, 7), (8, 0.1, 0, 0, 0), (21, 0.9, 255, 99, 2**40)])
def test_the_mask_is_the_numpy_trainers(width, p, layer, epoch, seed):
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((len(IDS), width)).astype(np.float32))
    got = dropout(x, torch.from_numpy(IDS), p, layer, epoch=epoch, seed=seed)
    want, _ = backend("numpy").act_dropout(x.numpy(), "none", Noise(rate=p, seed=seed, epoch=epoch), layer, IDS)
    assert got.dtype == torch.float32 and got.shape == x.shape
    np.testing.assert_array_equal(got.numpy(), want)
    dropped = float((want == 0).mean())
    assert 0 < dropped < 1  # some units kept, some dropped


def test_a_vertex_has_its_mask_in_any_row():
    x = torch.ones((len(IDS), 16))
    order = torch.tensor([3, 7, 0, 5, 1, 6, 2, 4])
    first = dropout(x, torch.from_numpy(IDS), 0.5, 1, epoch=4, seed=3)
    moved = dropout(x, torch.from_numpy(IDS)[order], 0.5, 1, epoch=4, seed=3)
    assert torch.equal(moved, first[order])
    assert (first == 0).any() and (first == 2).any()  # a mask, dropped units and kept ones
    # and alone: a vertex's row does not depend on the other rows given with it
    assert torch.equal(dropout(x[:1], torch.from_numpy(IDS[5:6]), 0.5, 1, epoch=4, seed=3), first[5:6])


def test_the_mask_changes_with_epoch_layer_and_seed():
    x, ids = torch.ones((len(IDS), 16)), torch.from_numpy(IDS)
    base = dropout(x, ids, 0.5, 1, epoch=4, seed=3)
    for kw in ({"layer": 2, "epoch": 4, "seed": 3}, {"layer": 1, "epoch": 5, "seed": 3},
               {"layer": 1, "epoch": 4, "seed": 4}):
        layer = kw.pop("layer")
        assert not torch.equal(dropout(x, ids, 0.5, layer, **kw), base)


def test_the_gradient_is_g_times_the_mask():
    ids = torch.from_numpy(IDS)
    mask = torch.from_numpy(numpy_mask(IDS, 10, 0.3, 1, 2, 5))
    x = torch.from_numpy(np.random.default_rng(1).standard_normal((len(IDS), 10)).astype(np.float32))
    x.requires_grad_()
    g = torch.from_numpy(np.random.default_rng(2).standard_normal((len(IDS), 10)).astype(np.float32))
    dropout(x, ids, 0.3, 1, epoch=2, seed=5).backward(g)
    assert torch.equal(x.grad, g * mask)


def test_the_rows_ids_come_from_a_block():
    from types import SimpleNamespace

    rows = SimpleNamespace(node_ids=torch.from_numpy(np.concatenate([IDS, [77, 78]])))  # own rows, then halo
    x = torch.ones((len(IDS), 9))
    assert torch.equal(dropout(x, rows, 0.5, 0, epoch=1, seed=1), dropout(x, torch.from_numpy(IDS), 0.5, 0, epoch=1,
                                                                           seed=1))


def test_the_mask_is_drawn_on_the_inputs_device():
    """Ids on the CPU, rows elsewhere (``meta`` standing for a GPU): the mask and the gradient follow the rows."""
    x = torch.ones((len(IDS), 10), device="meta", requires_grad=True)
    out = dropout(x, torch.from_numpy(IDS), 0.5, 0, epoch=1, seed=2)
    out.sum().backward()
    assert (out.device.type, tuple(out.shape), out.dtype, x.grad.device.type) == ("meta", (8, 10), torch.float32,
                                                                                  "meta")


def test_evaluation_and_rate_zero_give_the_input_itself():
    x, ids = torch.ones((len(IDS), 4)), torch.from_numpy(IDS)
    assert dropout(x, ids, 0.5, 0, epoch=0, seed=0, training=False) is x
    assert dropout(x, ids, 0.0, 0, epoch=0, seed=0) is x


def test_the_module_follows_set_epoch_and_eval():
    model = torch.nn.ModuleDict({"a": Dropout(0.5, 0, seed=9), "b": Dropout(0.5, 1, seed=9)})
    x, ids = torch.ones((len(IDS), 12)), torch.from_numpy(IDS)
    assert model["a"](x, ids).equal(dropout(x, ids, 0.5, 0, epoch=0, seed=9))  # epoch 0 until set
    set_epoch(model, 6)
    assert [model["a"].epoch, model["b"].epoch] == [6, 6]
    assert model["b"](x, ids).equal(dropout(x, ids, 0.5, 1, epoch=6, seed=9))
    model.eval()
    assert model["a"](x, ids) is x
    assert repr(model["a"]) == "Dropout(p=0.5, layer=0, seed=9)"


@pytest.mark.parametrize("p,layer,message", [(1.0, 0, "dropout rate 1.0: not in [0, 1)"),
                                             (-0.1, 0, "dropout rate -0.1: not in [0, 1)"),
                                             (0.5, 256, "dropout layer 256: not in 0..255 (the mask's counter "
                                                        "holds one byte of it)")])
def test_bad_rates_and_layers_are_one_line(p, layer, message):
    with pytest.raises(UserError) as e:
        dropout(torch.ones((2, 2)), torch.tensor([0, 1]), p, layer, epoch=0, seed=0)
    assert str(e.value) == message
    with pytest.raises(UserError):
        Dropout(p, layer)


def test_a_rank_with_no_rows_drops_nothing():
    """0 rows (a rank with no rows of a batch): a (0, d) output and gradient, no reshape error (a regression)."""
    x = torch.zeros((0, 5), requires_grad=True)
    out = dropout(x, torch.zeros(0, dtype=torch.int64), 0.5, 0, epoch=1, seed=2)
    assert out.shape == (0, 5)
    out.sum().backward()
    assert x.grad is not None and x.grad.shape == (0, 5)
    assert Dropout(0.5, 1)(torch.zeros((0, 3)), torch.zeros(0, dtype=torch.int64)).shape == (0, 3)


def test_too_few_ids_is_refused():
    with pytest.raises(ValueError, match="3 rows given, 2 vertex ids known"):
        dropout(torch.ones((3, 2)), torch.tensor([0, 1]), 0.5, 0, epoch=0, seed=0)


def losses(ranks, path, log, dropout_rate="0.5"):
    cmd = [sys.executable, str(EXAMPLE), str(path), "--epochs", "40", "--dropout", dropout_rate, "--log-file", str(log)]
    res = subprocess.run([mpirun(), "-n", str(ranks), *cmd] if ranks > 1 else cmd, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return np.array([json.loads(line)["loss"] for line in log.read_text().splitlines() if '"loss"' in line])


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_dropout_gives_one_process_losses_at_every_p(mpi_stores, tmp_path):
    one = losses(1, mpi_stores["undirected", 1], tmp_path / "one.jsonl")
    assert one.shape == (40,)
    without = losses(1, mpi_stores["undirected", 1], tmp_path / "off.jsonl", "0")
    assert np.abs(one / without - 1).max() > 1e-2  # dropout is on: it changes the losses
    for ranks in (2, 4):
        np.testing.assert_allclose(losses(ranks, mpi_stores["undirected", ranks], tmp_path / f"p{ranks}.jsonl"), one,
                                   rtol=1e-5)
