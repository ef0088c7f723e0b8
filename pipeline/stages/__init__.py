"""The stages of a build, in order: :mod:`.ingest` (with :mod:`.graphfile`),
:mod:`.normalize`, :mod:`.partition`, :mod:`.quality`, :mod:`.layout` (with
:mod:`.place` and :mod:`.pieces`), :mod:`.write` (with :mod:`.rankwrite` and
:mod:`.spill`). Each is a function from the earlier stages' typed results to
its own (a frozen dataclass of futures and small numbers); :mod:`..builder`
composes them."""
