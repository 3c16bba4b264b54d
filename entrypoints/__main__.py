"""``python -m entrypoints serve`` is ``gns3-copilot serve``."""

import sys

from entrypoints.cli import main

sys.exit(main())
