import sys

from .cli import main

if __name__ == "__main__":  # not when a spawned child process imports it (see partition.kahypar_partition)
    sys.exit(main())
