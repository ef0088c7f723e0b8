"""What every distributed algorithm must do (:class:`AlgorithmTests`, ``algorithm = "1.5d"``): P ranks give one
rank's losses and every rank's bytes, messages and received bytes by kind equal the prediction. Its cases are
a fixture's params, built by :func:`algorithm_cases` (which checks them against the registries and marks those
outside the quick suite slow)."""

from __future__ import annotations

import numpy as np
import pytest

from shgcn.core.algorithms import ALGORITHMS, COMBINES
from shgcn.core.archs import ARCHS
from shgcn.core.exchanges import EXCHANGES

from .runs import ARCH_ARGS, GRAPHS, check_run_bytes, run


class AlgorithmTests:
    """Subclass and set ``algorithm``, define :meth:`parts` and :meth:`ranks`, and a ``case`` fixture whose
    params are :func:`algorithm_cases` of your cases ((replication or grid side c, exchange, row combine, arch,
    graph kind) each) and of those in the quick suite."""

    algorithm = ""
    cases: tuple = ()
    quick = None  # the cases carry their own marks (algorithm_cases): the quick hook leaves the class alone
    _reference: dict = {}

    def parts(self, c: int) -> int:
        """The store's parts for a grid of side or replication c."""
        raise NotImplementedError

    def ranks(self, c: int) -> int:
        raise NotImplementedError

    def reference(self, mpi_stores, tmp_path, arch, kind):
        """The losses of one rank (20 epochs, dropout on), once per architecture and graph."""
        if (arch, kind) not in self._reference:
            _, epochs = run(1, mpi_stores[kind, 1], tmp_path / "ref.jsonl", "--arch", arch, *ARCH_ARGS.get(arch, []),
                            "--epochs", 20, "--eval-every", 20)
            self._reference[arch, kind] = [e.loss for e in epochs]
        return self._reference[arch, kind]

    def test_the_spec_names_this_implementation(self):
        from shgcn.trainer.algorithms import ALGORITHMS as PARTS

        part = PARTS[self.algorithm]
        assert part.spec is ALGORITHMS[self.algorithm] and part.name == self.algorithm and callable(part.impl)

    @pytest.mark.mpi
    def test_grid_gives_one_rank_losses_and_predicted_bytes(self, mpi_stores, tmp_path, case):
        c, exchange, combine, arch, kind = case
        path, ranks = mpi_stores[kind, self.parts(c)], self.ranks(c)
        spec = ALGORITHMS[self.algorithm]  # its own options only: another algorithm's, given, is refused
        own = [*(("--replication", c) if spec.replicates else ()),
               *(("--row-combine", combine) if any(o.flag == "--row-combine" for o in spec.options) else ())]
        header, epochs = run(ranks, path, tmp_path / "run.jsonl", "--arch", arch, *ARCH_ARGS.get(arch, []),
                             "--epochs", 20, "--eval-every", 20, "--algorithm", self.algorithm, "--exchange", exchange,
                             *own)
        assert header.algorithm == self.algorithm and header.parts == ranks and len(header.memory) == ranks
        ref = self.reference(mpi_stores, tmp_path, arch, kind)
        np.testing.assert_allclose([e.loss for e in epochs], ref, rtol=1e-4)
        assert ref[-1] < ref[0]
        pred = check_run_bytes(path, header, epochs)
        if ranks > 1 and self.ranks(c) != self.parts(c):
            assert pred["inrow_bytes"].sum() > 0  # the row's ranks did combine


def algorithm_cases(cases, quick):
    """pytest params of ``cases`` ((c, exchange, row combine, arch, graph kind) each): those outside ``quick``
    are slow. ValueError when a case names an exchange, architecture, row combine or graph that does not exist,
    or ``quick`` names a case that is not one of ``cases`` (a typo would drop it silently)."""
    for c in (*cases, *quick):
        _, exchange, combine, arch, kind = c
        wrong = [f"exchange {exchange!r} ({', '.join(EXCHANGES)})"] * (exchange not in EXCHANGES) + \
            [f"architecture {arch!r} ({', '.join(ARCHS)})"] * (arch not in ARCHS) + \
            [f"row combine {combine!r} ({', '.join(COMBINES)})"] * (combine not in COMBINES) + \
            [f"graph {kind!r} ({', '.join(GRAPHS)})"] * (kind not in GRAPHS)
        if wrong:
            raise ValueError(f"algorithm case {c}: no {'; no '.join(wrong)}")
    stray = sorted(set(quick) - set(cases), key=str)
    if stray:
        raise ValueError(f"quick names cases that are not among the cases: {stray}")
    return [pytest.param(c, id="-".join(map(str, c)), marks=() if c in quick else pytest.mark.slow) for c in cases]
