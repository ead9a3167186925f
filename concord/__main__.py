"""``python -m concord``."""

import sys

from concord.cli import main

sys.exit(main())
