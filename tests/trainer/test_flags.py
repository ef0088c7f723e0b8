"""The parts' own flags (trainer/flags.py): each declared option a flag once, grouped by part, with its
type and choices, and taken back out of the parsed arguments by dest."""

import argparse

import pytest

from shgcn.trainer.flags import add_part_options, part_options, registries


def test_every_declared_option_is_one_flag_and_comes_back_by_dest():
    p = argparse.ArgumentParser()
    for reg in registries():
        add_part_options(p, reg)
        add_part_options(p, reg)  # again: a flag already there is not added twice
    args = p.parse_args(["--heads", "3", "--replication", "2", "--torch-kernels", "torch", "--row-combine", "gather"])
    opts = part_options(args)
    assert opts == {"heads": 3, "replication": 2, "row_combine": "gather", "torch_kernels": "torch"}  # the given ones
    assert vars(args) == {}  # all taken out: what is left is TrainConfig's own fields
    titles = {g.title for g in p._action_groups}
    assert {"--arch gat's options", "--algorithm 1.5d's options", "--backend torch's options"} <= titles


# ---------------------------------------------------------------- a plugin's parts on the trainer's command line

PLUGINS = {
    "lr": ("from shgcn.core.archs import ARCHS, ArchSpec\nfrom shgcn.core.options import Option\n"
           "ARCHS.register(ArchSpec('lrgcn', 'x', options=(Option('--lr', 0.5, 'mine', type=float),)))\n",
           "--arch lrgcn: option --lr: the flag is shgcn-train's own"),
    "noimpl": ("from shgcn.core.archs import ARCHS, ArchSpec\nARCHS.register(ArchSpec('bare', 'x'))\n",
               "--arch bare: a spec registered without an implementation (shgcn.parts: register the spec and its "
               "implementation in one call)"),
    "exit0": ("raise SystemExit(0)\n", "plugin 'hostile_exit0' (SHGCN_PLUGINS or entry point group shgcn.plugins): "
                                       "SystemExit: 0"),
}


@pytest.mark.parametrize("case", sorted(PLUGINS))
def test_a_plugin_that_clashes_or_fails_is_one_line_and_exit_2(tmp_path, case):
    import os
    import subprocess
    import sys

    from helpers import REPO

    body, message = PLUGINS[case]
    (tmp_path / f"hostile_{case}.py").write_text(body)
    env = {**os.environ, "SHGCN_PLUGINS": f"hostile_{case}", "PYTHONPATH": str(tmp_path)}
    res = subprocess.run([sys.executable, str(REPO / "trainer" / "train.py"), str(tmp_path / "none.zarr")],
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 2 and res.stderr.strip().splitlines() == [f"shgcn-train: error: {message}"], res.stderr


def test_the_minibatch_options_given_are_known_even_at_their_defaults():
    """`--sampler node` without `--mode minibatch` (the sampler's default) was accepted and ignored: what the
    command line gives is what counts, not whether it differs from the default."""
    from shgcn.trainer.cli import parser
    from shgcn.trainer.flags import given_minibatch_options

    p = parser()
    assert given_minibatch_options(p, ["s.zarr"]) == ()
    assert given_minibatch_options(p, ["s.zarr", "--sampler", "node", "--walk-length=2"]) == ("sampler", "walk_length")
    assert given_minibatch_options(p, ["s.zarr", "--batch-size", "auto", "--epochs", "3"]) == ("batch_size",)
