"""``python -m gateway``: the standalone HTTP/JSON gateway."""

import sys

from gateway.cli import main

sys.exit(main())
