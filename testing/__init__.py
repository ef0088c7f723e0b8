"""Conformance classes for your own parts, installed with the package: subclass
one, name your part, and pytest runs every check the built-in parts pass.

- :mod:`.partitioners`: :class:`~.partitioners.PartitionerTests` (a partition
  model, ``pipeline build --model``), with its ``sbm_graph`` fixture;
- :mod:`.readers`: :class:`~.readers.ReaderTests` (a graph reader,
  ``pipeline build --format``).

The trainer's (architecture, exchange, algorithm, backend) are still in the
repository's ``tests/helpers/parts.py``: they run the trainer under mpirun
on stores the suite builds, and move here with the trainer's declared parts
(issue 47, item 1).

Needs the ``test`` extra (``pip install 'shgcn[test]'``): the modules import
pytest when they are imported; this package's ``__init__`` imports nothing,
and no other package of shgcn imports this one (an import-linter contract).
The reader conformance class asks for a ``client`` fixture (a Dask client):
:func:`.readers.client` is one, for your conftest.py.
"""
