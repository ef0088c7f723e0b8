import sys

from .cli import main

if __name__ == "__main__":  # importing the module (e.g. by multiprocessing) must not run the CLI
    sys.exit(main())
