"""Conformance classes for your own parts, installed with the package: subclass
one, name your part, and pytest runs every check the built-in parts pass.

- :mod:`.partitioners`: :class:`~.partitioners.PartitionerTests` (a partition
  model, ``pipeline build --model``);
- :mod:`.readers`: :class:`~.readers.ReaderTests` (a graph reader,
  ``pipeline build --format``);
- :mod:`.samplers`: :class:`~.samplers.SamplerTests` (a mini-batch sampler,
  ``--sampler``);
- :mod:`.archs`, :mod:`.exchanges`, :mod:`.algorithms`, :mod:`.backends`: the
  trainer's (``--arch``, ``--exchange``, ``--algorithm``, ``--backend``); they
  run the trainer under mpirun on stores they build once (``mpi_stores``).

The package is a pytest plugin (:mod:`.plugin`, entry point ``pytest11``):
its marks (``mpi``, ``slow``), its fixtures (``client``, ``sbm_graph``,
``mpi_stores``) and its quick-suite hook come with it, so a part's test file
is its class's subclass and nothing else, with no conftest.py.

Needs the ``test`` extra (``pip install 'shgcn[test]'``): the modules import
pytest when they are imported; this package's ``__init__`` imports nothing,
and no other package of shgcn imports this one (an import-linter contract).
"""
