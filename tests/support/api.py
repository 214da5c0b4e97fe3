"""A small JSON client for tests: returns (status, document) instead of raising."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


class Api:
    def __init__(self, base_url: str, key: str | None, timeout_s: float = 30) -> None:
        self.base_url = base_url
        self.key = key
        self.timeout_s = timeout_s

    def as_key(self, key: str | None) -> Api:
        return Api(self.base_url, key, self.timeout_s)

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        headers = {"Content-Type": "application/json", **(headers or {})}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        request = urllib.request.Request(
            self.base_url + path, data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                text = response.read()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            text = error.read()
            try:
                return error.code, json.loads(text)
            except ValueError:
                return error.code, text.decode()

    def get(self, path: str) -> tuple[int, Any]:
        return self.call("GET", path)

    def post(self, path: str, body: Any = None) -> tuple[int, Any]:
        return self.call("POST", path, body)


def execution_states(api: Api) -> dict[str, int]:
    """How many of the caller's executions are in each state and attempt, e.g.
    `{"succeeded/1": 500}`, read through every page of `GET /v1/executions`."""
    states: dict[str, int] = {}
    cursor = None
    while True:
        status, page = api.get("/v1/executions?limit=500" + (f"&cursor={cursor}" if cursor else ""))
        assert status == 200, page
        for item in page["items"]:
            key = f"{item['state']}/{item['attempt']}"
            states[key] = states.get(key, 0) + 1
        cursor = page["next_cursor"]
        if cursor is None:
            return states
