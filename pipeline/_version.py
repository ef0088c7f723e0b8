"""The installed version of shgcn (no other import: ``--version`` stays instant)."""

from importlib import metadata as _md

try:
    __version__ = _md.version("shgcn")
except _md.PackageNotFoundError:  # a checkout that is not installed
    __version__ = "0+unknown"
