"""Prices for turning tokens into cost when an agent reports tokens but no cost.

US dollars per million tokens: (input, cached input, output), from the providers' public price
lists. A model not listed is priced as its backend's default model: an estimate, and the run
record says the cost was computed (`cost_computed`), never reported.
"""

from __future__ import annotations

PER_MILLION: dict[str, tuple[float, float, float]] = {
    "gpt-5-codex": (1.25, 0.125, 10.0),
    "gpt-5": (1.25, 0.125, 10.0),
    "gpt-5-mini": (0.25, 0.025, 2.0),
    "gpt-4.1": (2.0, 0.5, 8.0),
    "gemini-2.5-pro": (1.25, 0.31, 10.0),
    "gemini-2.5-flash": (0.30, 0.075, 2.50),
}
DEFAULT = {"codex": "gpt-5-codex", "opencode": "gpt-5", "gemini": "gemini-2.5-pro"}


def cost(backend: str, model: str | None, *, fresh: int, cached: int, output: int) -> float:
    """The cost of `fresh` uncached input, `cached` input and `output` tokens."""
    rates = PER_MILLION.get(model or "") or PER_MILLION[DEFAULT[backend]]
    return (fresh * rates[0] + cached * rates[1] + output * rates[2]) / 1_000_000
