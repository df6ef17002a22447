"""``python -m unbiased_criteria.cli``."""

import sys

from unbiased_criteria.cli import main

sys.exit(main())
