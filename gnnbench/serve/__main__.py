import sys

from gnnbench.serve import main

if __name__ == "__main__":
    sys.exit(main())
