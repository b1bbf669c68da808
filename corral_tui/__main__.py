"""`python -m corral_tui`: the same as the `corral-tui` command."""

import sys

from corral_tui.cli import main

if __name__ == "__main__":
    sys.exit(main())
