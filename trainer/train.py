"""Thin script for a checkout: ``mpirun -n P python trainer/train.py STORE [options]``.

The same as ``shgcn-train`` (see :mod:`shgcn.trainer.cli`); the project must be
installed (``pip install -e .``).
"""

import os
import sys

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        sys.path.pop(0)  # this folder's modules (plan, model...) must not shadow top-level ones
    try:
        from shgcn.trainer.cli import main
    except ImportError as e:
        print(f"train.py: shgcn is not importable ({e}); install it first: pip install -e .", file=sys.stderr)
        sys.exit(2)
    sys.exit(main())
