from __future__ import annotations

import sys

from sgf.cli import main

sys.exit(main())
