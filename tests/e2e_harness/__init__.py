"""Helpers for the end-to-end tests: a project with a bare remote, waits, processes."""

from __future__ import annotations
