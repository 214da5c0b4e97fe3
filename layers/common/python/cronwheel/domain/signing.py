"""Request signing for HTTP targets: `v1=<hex HMAC-SHA256 of "<timestamp>.<body>">`."""

from __future__ import annotations

import hashlib
import hmac


def signature(secret: str, timestamp: str, body: bytes) -> str:
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "v1=" + mac.hexdigest()


def verify(secrets: list[str], timestamp: str, body: bytes, header: str) -> bool:
    """True when the header matches under any of the secrets (old and new during rotation)."""
    return any(hmac.compare_digest(signature(s, timestamp, body), header) for s in secrets)
