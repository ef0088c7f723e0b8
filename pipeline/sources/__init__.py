"""Where graphs come from: the dataset registry (:mod:`.datasets`, its
downloads in :mod:`.fetch`), graph
readers behind one protocol (:class:`.base.Reader`), one module per format
(:mod:`.edgelist`, :mod:`.mtx`, :mod:`.metis` over :mod:`.text` and
:mod:`.parsing`; :mod:`.npz` and :mod:`.planetoid` over :mod:`.whole`;
dataset directories in :mod:`.ogb` and :mod:`.saint`, over
:mod:`.rowfiles`, :mod:`.csvblocks`, :mod:`.nodefiles`) listed by
:mod:`.registry`, the format of a path decided by :mod:`.probe`, and read
by :mod:`.readers`; seeded generators (:mod:`.synthetic`) and in-memory
graphs (:mod:`.memory`). :func:`.resolve.read_source` picks one for a
build's ``SOURCE``; every reader returns a :class:`~.base.RawSource` of
futures: the edges stay on the workers."""
