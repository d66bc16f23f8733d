"""`python -m tuning.cli`, the same as the `tune` command."""

import sys

from .main import main

sys.exit(main())
