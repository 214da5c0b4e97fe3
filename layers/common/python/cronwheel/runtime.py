"""One place that builds the process-wide collaborators from settings, once."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from cronwheel.clock import Clock, SystemClock
from cronwheel.dead_events import DeadEventPublisher, publisher_for
from cronwheel.dispatch_queue import DispatchQueue
from cronwheel.settings import Settings
from cronwheel.store.store import Store
from cronwheel.targets.http import HttpCaller
from cronwheel.targets.secrets import SecretResolver
from cronwheel.targets.sqs import SqsSender


@dataclass(frozen=True)
class Runtime:
    settings: Settings
    store: Store
    queue: DispatchQueue
    http: HttpCaller
    sqs: SqsSender
    clock: Clock
    secrets: SecretResolver
    dead_events: DeadEventPublisher

    @classmethod
    def build(cls, settings: Settings, clock: Clock | None = None) -> Runtime:
        return cls(
            settings=settings,
            store=Store(settings),
            queue=DispatchQueue(settings),
            http=HttpCaller(),
            sqs=SqsSender(settings.region, settings.endpoint_url),
            clock=clock or SystemClock(),
            secrets=SecretResolver(settings.region, settings.endpoint_url),
            dead_events=publisher_for(settings),
        )


_lock = threading.Lock()
_runtime: Runtime | None = None


def runtime() -> Runtime:
    """The process's runtime, built from the environment on first use (not at import)."""
    global _runtime
    with _lock:
        if _runtime is None:
            _runtime = Runtime.build(Settings.from_env())
        return _runtime


def reset_runtime() -> None:
    """Forget the runtime so the next use rebuilds it (tests, the local stack)."""
    global _runtime
    with _lock:
        _runtime = None
