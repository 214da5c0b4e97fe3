"""Identifiers. Execution ids are derived from the occurrence, so firing is idempotent."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import datetime

from cronwheel.domain.instants import format_instant
from cronwheel.domain.model import Trigger


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def execution_id(source_id: str, scheduled_for: datetime, trigger: Trigger) -> str:
    """The same occurrence always maps to the same id; manual and catch-up runs get their own."""
    material = f"{source_id}|{format_instant(scheduled_for)}|{trigger.value}"
    return "ex_" + hashlib.sha256(material.encode()).hexdigest()[:26]


def new_api_key() -> str:
    return "cwk_" + secrets.token_urlsafe(32)


def hash_api_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_signing_secret() -> str:
    return "cws_" + secrets.token_urlsafe(32)


def shard_of(source_id: str, shards: int) -> int:
    """Stable across processes and languages (unlike Python's `hash`)."""
    digest = hashlib.sha256(source_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") % shards
