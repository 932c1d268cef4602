from __future__ import annotations

import sys

from ralph.cli import main

sys.exit(main())
