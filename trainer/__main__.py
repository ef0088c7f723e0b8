"""``python -m shgcn.trainer STORE ...``: the same as ``shgcn-train``."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
