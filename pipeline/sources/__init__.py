"""Where graphs come from: the dataset registry (:mod:`.datasets`), file
readers (:mod:`.readers`, parsing in :mod:`.parsing`, :mod:`.probe`,
:mod:`.tokens`, :mod:`.planetoid`; dataset directories in :mod:`.ogb` and
:mod:`.saint`, over :mod:`.rowfiles`, :mod:`.csvblocks`, :mod:`.nodefiles`), seeded generators (:mod:`.synthetic`)
and in-memory graphs (:mod:`.memory`). :func:`.resolve.read_source` picks
one for a build's ``SOURCE``; every reader returns a
:class:`~.readers.RawSource` of futures: the edges stay on the workers."""

FORMATS = ("edgelist", "mtx", "metis", "npz", "planetoid", "ogb", "saint")  # --format
HEADERS = ("auto", "yes", "no")  # --header: is an edge list's first line its size?
