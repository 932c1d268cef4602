from __future__ import annotations

import sys

from pensa.cli import main

sys.exit(main())
