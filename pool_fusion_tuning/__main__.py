"""`python -m pool_fusion_tuning`, the same as the `tune` command (in a checkout, uninstalled)."""

import sys

from pool_fusion_tuning.tuning.cli.main import main

sys.exit(main())
