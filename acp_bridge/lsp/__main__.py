"""`python -m acp_bridge.lsp`: the same as `acp-bridge lsp`."""

import sys

from acp_bridge.lsp.command import main

sys.exit(main())
