"""Backoff between attempts, with deterministic jitter so a retry time is reproducible."""

from __future__ import annotations

import hashlib

from cronwheel.domain.model import Backoff, RetryPolicy


def _unit_interval(seed: str) -> float:
    digest = hashlib.sha256(seed.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def backoff_delay_s(policy: RetryPolicy, failed_attempt: int, seed: str) -> float:
    """Seconds to wait after `failed_attempt` (1-based) failed.

    The base grows per policy and is capped at `max_s`; "equal jitter" then picks a point in the
    upper half of the base, so retries of many executions spread out yet never come early.
    """
    if policy.backoff is Backoff.EXPONENTIAL:
        base = policy.initial_s * 2 ** (failed_attempt - 1)
    elif policy.backoff is Backoff.LINEAR:
        base = policy.initial_s * failed_attempt
    else:
        base = policy.initial_s
    base = min(float(base), float(policy.max_s))
    return base / 2 + base / 2 * _unit_interval(f"{seed}#{failed_attempt}")


def attempts_left(policy: RetryPolicy, attempt: int) -> bool:
    return attempt < policy.max_attempts
