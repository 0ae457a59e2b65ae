"""`python -m acp_bridge`: the same command line as `acp-bridge` (see cli.py)."""

import sys

from acp_bridge.cli import main

sys.exit(main())
