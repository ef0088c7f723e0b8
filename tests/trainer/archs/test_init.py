"""The architectures' registry in the trainer (trainer/archs/__init__.py): every spec of
shgcn.core.archs.ARCHS builds its layers, seeded."""

import numpy as np

from shgcn.core.archs import ARCHS
from shgcn.trainer import archs
from shgcn.trainer.backends import backend


def test_every_registered_architecture_builds():
    for spec in ARCHS.values():
        model = archs.build(spec, [4, 3, 2], 5, backend(), {"heads": 2, "out_heads": 1})
        assert model.spec is spec and len(model.params) > 0 and archs.ARCHS[spec.name].spec is spec
        assert all(np.isfinite(p).all() for p in model.params)


def test_an_architectures_own_options_reach_its_constructor():
    gat = archs.build("gat", [4, 3, 2], 5, backend(), {"heads": 3, "out_heads": 2, "attn_dropout": 0.25, "x": 1})
    assert gat.heads == [3, 2] and gat.options == {"heads": 3, "out_heads": 2, "attn_dropout": 0.25}
    assert gat.attn_rate(0.5) == 0.25 and archs.build("gat", [4, 3, 2], 5, backend()).attn_rate(0.5) == 0.5
