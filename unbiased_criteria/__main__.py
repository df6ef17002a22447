"""``python -m unbiased_criteria``: the command line, as ``unbiased-criteria`` and
``python -m unbiased_criteria.cli`` run it."""

import sys

from unbiased_criteria.cli import main

if __name__ == "__main__":
    sys.exit(main())
