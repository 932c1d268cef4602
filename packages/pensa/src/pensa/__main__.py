from __future__ import annotations

from pensa.program import main

main()
