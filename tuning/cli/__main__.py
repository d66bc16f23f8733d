"""`python -m pool_fusion_tuning.tuning.cli`, the same as the `tune` command. In a checkout the
older `python -m tuning.cli` of the committed reports lands here too, and is handed to the
one import root, so that no module is loaded under two names."""

import sys

from pool_fusion_tuning.tuning.cli.main import main

sys.exit(main())
