"""An in-process stand-in for `HttpCaller`: records every delivery and answers as told."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cronwheel.targets.http import HttpResult


@dataclass(frozen=True)
class Delivery:
    execution_id: str
    attempt: int
    fencing_token: int
    url: str


class FakeTarget:
    """`answer(delivery)` gives the HTTP status (default: 200 for every call); `before_call`
    runs first (a test may make the caller's process die there)."""

    def __init__(
        self,
        answer: Callable[[Delivery], int] | None = None,
        before_call: Callable[[], None] | None = None,
    ) -> None:
        self.deliveries: list[Delivery] = []
        self._answer = answer or (lambda _: 200)
        self._before_call = before_call or (lambda: None)

    def call(
        self, *, method: str, url: str, headers: dict[str, str], body: bytes, timeout_s: float
    ) -> HttpResult:
        self._before_call()
        delivery = Delivery(
            execution_id=headers["X-Cronwheel-Execution-Id"],
            attempt=int(headers["X-Cronwheel-Attempt"]),
            fencing_token=int(headers["X-Cronwheel-Fencing-Token"]),
            url=url,
        )
        self.deliveries.append(delivery)
        return HttpResult(self._answer(delivery), "", None, False, 1)

    def calls_for(self, execution_id: str) -> list[Delivery]:
        return [d for d in self.deliveries if d.execution_id == execution_id]
