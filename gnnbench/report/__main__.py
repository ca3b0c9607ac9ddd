import sys

from gnnbench.report.cli import main

sys.exit(main())
