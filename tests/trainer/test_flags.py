"""The parts' own flags (trainer/flags.py): each declared option a flag once, grouped by part, with its
type and choices, and taken back out of the parsed arguments by dest."""

import argparse

from shgcn.trainer.flags import add_part_options, part_options, registries


def test_every_declared_option_is_one_flag_and_comes_back_by_dest():
    p = argparse.ArgumentParser()
    for reg in registries():
        add_part_options(p, reg)
        add_part_options(p, reg)  # again: a flag already there is not added twice
    args = p.parse_args(["--heads", "3", "--replication", "2", "--torch-kernels", "torch", "--row-combine", "gather"])
    opts = part_options(args)
    assert opts == {"attn_dropout": None, "heads": 3, "out_heads": 1, "replication": 2, "row_combine": "gather",
                    "torch_compile": "auto", "torch_kernels": "torch"}
    assert vars(args) == {}  # all taken out: what is left is TrainConfig's own fields
    titles = {g.title for g in p._action_groups}
    assert {"--arch gat's options", "--algorithm 1.5d's options", "--backend torch's options"} <= titles
