"""Where the build runs: the Dask client and task submission
(:mod:`.client`), child processes for native code that holds the GIL
(:mod:`.child`), and the stage clock, heartbeat, progress and peak memory
(:mod:`.monitor`, its bar on a terminal in :mod:`.progress`); freed memory goes back to
the system at once through :mod:`shgcn.core.malloc`."""
