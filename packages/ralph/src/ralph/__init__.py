"""ralph: see docs/ralph.md in the workspace."""

from __future__ import annotations

__version__ = "0.1.0"
