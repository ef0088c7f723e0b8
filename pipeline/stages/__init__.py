"""The stages of a build, in order: :mod:`.ingest`, :mod:`.normalize`,
:mod:`.partition`, :mod:`.quality`, :mod:`.layout`, :mod:`.write`. Each is a
function from the earlier stages' typed results to its own (a frozen
dataclass of futures and small numbers); :mod:`..builder` composes them."""
