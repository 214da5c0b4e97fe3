"""A small stdlib HTTP client for the cronwheel REST API v1."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

USER_AGENT = "cronwheel-cli/0.1"
DEFAULT_TIMEOUT_S = 30.0

QueryValue = str | int | bool | None


class ApiError(Exception):
    """The API answered with an error (`{"error": {"code", "message", "field"}}`)."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.field = field


class ApiUnreachableError(Exception):
    """No HTTP answer at all: refused, DNS failure, timeout, connection dropped."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"cannot reach {url}: {reason}")
        self.url = url
        self.reason = reason


class ApiClient:
    """Calls the cronwheel API with a bearer key; one `request` method for every endpoint."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"API URL must look like http://host:port, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._timeout_s = timeout_s

    def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        query: Mapping[str, QueryValue] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Send one request and return the decoded JSON object ({} for an empty answer).

        `path` is sent as given: escape ids with `quote_id` and leave custom-method colons
        (`/v1/schedules/{id}:pause`) literal. `headers` add to the standard ones (e.g. If-Match).
        Raises ApiError for any non-2xx answer and ApiUnreachableError when no answer came.
        """
        url = self.base_url + path
        if query:
            pairs = {k: _query_text(v) for k, v in query.items() if v is not None}
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        sent_headers = {
            **(headers or {}),
            "Authorization": f"Bearer {self._api_key}",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent_headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, headers=sent_headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self._timeout_s) as resp:
                return _decode_success(resp.status, resp.read())
        except urllib.error.HTTPError as exc:
            with exc:
                raise _error_from_answer(exc.code, exc.reason, exc.read()) from None
        except urllib.error.URLError as exc:
            raise ApiUnreachableError(self.base_url, str(exc.reason)) from None
        except (OSError, http.client.HTTPException) as exc:
            raise ApiUnreachableError(self.base_url, str(exc) or type(exc).__name__) from None

    def paginate(
        self, path: str, query: Mapping[str, QueryValue] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Yield every item of a list endpoint, following `next_cursor` until it is null."""
        params = dict(query or {})
        seen: set[str] = set()
        while True:
            page = self.request("GET", path, query=params)
            yield from page.get("items", [])
            cursor = page.get("next_cursor")
            # A cursor seen before would loop forever; stop rather than trust the server.
            if not cursor or cursor in seen:
                return
            seen.add(cursor)
            params["cursor"] = cursor


def quote_id(value: str) -> str:
    """Escape an id for use as one path segment."""
    return urllib.parse.quote(value, safe="")


def _query_text(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _decode_success(status: int, raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        decoded = json.loads(raw)
    except ValueError:
        raise ApiError(status, "invalid_response", "the API answered with non-JSON") from None
    if not isinstance(decoded, dict):
        raise ApiError(status, "invalid_response", "the API answered with a non-object JSON body")
    return decoded


def _error_from_answer(status: int, reason: str, raw: bytes) -> ApiError:
    try:
        decoded = json.loads(raw)
    except ValueError:
        decoded = None
    error = decoded.get("error") if isinstance(decoded, dict) else None
    if isinstance(error, dict):
        field = error.get("field")
        return ApiError(
            status,
            str(error.get("code") or f"http_{status}"),
            str(error.get("message") or reason),
            str(field) if field else None,
        )
    return ApiError(status, f"http_{status}", str(reason) or "unexpected answer")
