"""Adam (trainer/optim.py) through the backend: the same steps as the textbook formula, and a state that a
checkpoint can save and load."""

import numpy as np

from shgcn.trainer.backends import backend
from shgcn.trainer.optim import Adam


def textbook(p, grads, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    m = np.zeros_like(p, np.float64)
    v = np.zeros_like(p, np.float64)
    p = p.astype(np.float64)
    for t, g in enumerate(grads, 1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return p


def test_steps_follow_the_formula_and_the_state_round_trips():
    rng = np.random.default_rng(0)
    p = rng.standard_normal(5).astype(np.float32)
    grads = [rng.standard_normal(5).astype(np.float32) for _ in range(3)]
    opt = Adam([p.copy()], 0.01, backend())
    for g in grads:
        opt.step([g])
    np.testing.assert_allclose(opt.params[0], textbook(p, grads), rtol=1e-5)
    state = opt.state()
    assert int(state["t"]) == 3 and set(state) == {"t", "m0", "v0"}
    other = Adam([opt.params[0].copy()], 0.01, backend())
    other.load(state)
    opt.step([grads[0]])
    other.step([grads[0]])
    np.testing.assert_array_equal(opt.params[0], other.params[0])
