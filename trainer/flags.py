"""The command-line flags the trainer's parts declare: each part's own
options (:class:`shgcn.core.options.Option` on its spec) become ``shgcn-train``
flags, grouped by part, and come back out of the parsed arguments as
:attr:`shgcn.trainer.config.TrainConfig.options` (``dest -> value``)."""

from __future__ import annotations

import argparse


def registries() -> tuple:
    """The registries of the parts whose specs declare options (architectures, exchanges, algorithms,
    backends): the command line's flags follow from them."""
    from shgcn.core.algorithms import ALGORITHMS
    from shgcn.core.archs import ARCHS
    from shgcn.core.exchanges import EXCHANGES

    from .backends import SPECS

    return ARCHS, EXCHANGES, ALGORITHMS, SPECS


def implemented() -> None:
    """Every trainer part a plugin registered has its implementation; a
    :class:`~shgcn.core.plugins.PluginError` naming a spec without one."""
    from .algorithms import ALGORITHMS
    from .archs import ARCHS
    from .backends import BACKENDS
    from .exchanges import EXCHANGES

    for parts in (ARCHS, EXCHANGES, ALGORITHMS, BACKENDS):
        parts.implemented()


def add_part_options(p: argparse.ArgumentParser, reg) -> None:
    """Each part's own options (:class:`shgcn.core.options.Option`), in a group per part that has any. A
    :class:`~shgcn.core.plugins.PluginError` for a flag the trainer has already (``--lr``) or that another
    part declares differently."""
    from shgcn.core.plugins import blame

    added = p.__dict__.setdefault("part_options", {})  # flag -> the Option that added it
    for spec in reg.values():
        if spec.options:
            group = p.add_argument_group(f"{reg.option} {spec.name}'s options")
            for opt in spec.options:
                if opt.flag in added and added[opt.flag] == opt:  # a flag several parts share: added once
                    continue
                if opt.flag in p._option_string_actions or opt.dest in {a.dest for a in p._actions}:
                    whose = "another part's, declared differently" if opt.flag in added else "shgcn-train's own"
                    raise blame(f"{reg.option} {spec.name}: option {opt.flag}: the flag is {whose}")
                opt.add_to(group, given_only=True)  # given or not: another part's option given is refused
                added[opt.flag] = opt


def part_options(args: argparse.Namespace) -> dict:
    """The parts' own options the command line gave, taken out of ``args`` (``dest -> value``), for
    :attr:`TrainConfig.options` (the others take their defaults)."""
    dests = {o.dest for reg in registries() for o in reg.all_options()}
    return {d: vars(args).pop(d) for d in sorted(dests) if d in vars(args)}


def given_minibatch_options(p: argparse.ArgumentParser, argv: list[str] | None) -> tuple[str, ...]:
    """The mini-batch options (``MINIBATCH_ONLY``'s dests) that ``argv`` gives, even at their defaults: argparse
    sets a default only where the namespace has no value yet, so a marker left in place was not given."""
    from .config import MINIBATCH_ONLY

    unset = object()
    probe = p.parse_args(argv, argparse.Namespace(**dict.fromkeys(MINIBATCH_ONLY, unset)))
    return tuple(d for d in MINIBATCH_ONLY if getattr(probe, d) is not unset)
