"""The global loss, accuracy and gradient sum (trainer/torchdist/objective.py) in one process: the rank's
share is the whole mean; the multi-label loss; sync_gradients leaves one process's gradients alone; the labels
and the mask are taken to the logits' device."""

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from shgcn.trainer.torchdist import accuracy, global_sum, masked_loss, sync_gradients  # noqa: E402


def block(y, multilabel=False):
    return SimpleNamespace(y=y, multilabel=multilabel)


def test_single_label_loss_and_accuracy():
    z = torch.tensor([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0], [0.0, 5.0]])
    y = torch.tensor([0, 0, 1, 1])
    mask = torch.tensor([True, True, False, True])
    assert torch.isclose(masked_loss(z, block(y), mask), F.cross_entropy(z[mask], y[mask]))
    assert accuracy(z, block(y), mask) == pytest.approx(2 / 3)


def test_multilabel_loss_sums_the_classes():
    z = torch.tensor([[2.0, -1.0], [0.5, 1.0]])
    y = torch.tensor([[1.0, 0.0], [0.0, 0.0]])
    mask = torch.tensor([True, True])
    want = F.binary_cross_entropy_with_logits(z, y, reduction="sum") / 2
    assert torch.isclose(masked_loss(z, block(y, True), mask), want)
    assert accuracy(z, block(y, True), mask) == 0.5


def test_one_process_sums_are_the_values():
    assert global_sum(torch.tensor([1.5, 2.0])).tolist() == [1.5, 2.0]
    p = torch.nn.Parameter(torch.ones(2))
    p.grad = torch.tensor([0.25, 0.5])
    sync_gradients([p])
    assert p.grad.tolist() == [0.25, 0.5]


class Elsewhere:
    """A tensor on another device (a GPU's, here where there is none): usable only once taken to the one asked."""

    def __init__(self, t):
        self.t, self.asked = t, []

    def to(self, device):
        self.asked.append(torch.device(device))
        return self.t


@pytest.mark.parametrize("multilabel", [False, True])
def test_the_loss_is_on_the_logits_device(multilabel):
    z = torch.tensor([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0]], requires_grad=True)
    y = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]) if multilabel else torch.tensor([0, 0, 1])
    mask = torch.tensor([True, False, True])
    y_away, mask_away = Elsewhere(y), Elsewhere(mask)
    loss = masked_loss(z, block(y_away, multilabel), mask_away)
    assert loss.device == z.device and torch.isclose(loss, masked_loss(z, block(y, multilabel), mask))
    assert y_away.asked == mask_away.asked == [z.device]
    assert accuracy(z, block(Elsewhere(y), multilabel), Elsewhere(mask)) == accuracy(z, block(y, multilabel), mask)
    loss.backward()
    assert z.grad is not None and z.grad.device == z.device
