"""Estimated cost of a run's tokens, where the provider publishes a price.

US dollars per million tokens (input, output), Anthropic's list prices as of
late 2026; a model not listed (a local or self-hosted server) has no price
and its cost is reported as null, not as zero. The offline provider is free."""

from __future__ import annotations

PRICES_AS_OF = "2026-11-30"  # when the table below was copied from the list prices

PER_MILLION: dict[str, tuple[float, float]] = {
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-opus-4-5": (5.0, 25.0),
    "claude-opus-4-1": (15.0, 75.0),
    "claude-opus-4": (15.0, 75.0),
    "claude-3-5-haiku": (0.8, 4.0),
}


def estimated_cost_usd(
    provider: str, model: str, input_tokens: int, output_tokens: int
) -> float | None:
    if provider == "offline":
        return 0.0
    # dated ids (claude-haiku-4-5-20251001) price as their family
    price = next((p for name, p in PER_MILLION.items() if model.startswith(name)), None)
    if price is None:
        return None
    return round((input_tokens * price[0] + output_tokens * price[1]) / 1e6, 6)


def price_of(provider: str, model: str) -> tuple[float, float] | None:
    """(input, output) dollars per million tokens, or None when unpublished."""
    if provider == "offline":
        return (0.0, 0.0)
    return next((p for name, p in PER_MILLION.items() if model.startswith(name)), None)
