"""``python -m skfcrf``: the command line (see :mod:`skfcrf.cli`)."""
import sys

from skfcrf.cli import main

if __name__ == "__main__":
    sys.exit(main())
