"""The architectures' registry in the trainer (trainer/archs/__init__.py): every spec of
shgcn.core.archs.ARCHS builds its layers, seeded."""

import numpy as np

from shgcn.core.archs import ARCHS
from shgcn.trainer import archs
from shgcn.trainer.backends import backend


def test_every_registered_architecture_builds():
    for spec in ARCHS.values():
        model = archs.build(spec, [4, 3, 2], 5, spec.layer_heads(2, 2, 1), backend())
        assert model.spec is spec and len(model.params) > 0
        assert all(np.isfinite(p).all() for p in model.params)
