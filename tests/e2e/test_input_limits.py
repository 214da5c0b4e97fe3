"""Limits on input (docs/security.md): a request body over 256 KiB and a payload over 64 KiB are
413, too many labels or headers and bodies nested too deeply are 400; each is answered in the
API's error format, and a request just within a limit is accepted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cronwheel.services.jobs import MAX_PAYLOAD_BYTES
from functions.api.handler import MAX_BODY_BYTES, MAX_JSON_DEPTH
from functions.api.schemas import MAX_HEADERS, MAX_LABELS
from tests.support.api import Api

TARGET = {"type": "http", "url": "http://127.0.0.1:9/never"}
LATER = 3600
_EMPTY_BLOB_PAYLOAD = len(json.dumps({"blob": ""}, separators=(",", ":")))


@pytest.fixture(scope="module")
def operator(api: Api) -> Api:
    # The matrix tenant: nothing here counts its schedules or jobs.
    return api.as_key("umbrella-operator-key")


def _payload_of(size: int) -> dict[str, str]:
    """A payload whose serialised form is exactly `size` bytes."""
    return {"blob": "x" * (size - _EMPTY_BLOB_PAYLOAD)}


def _schedule(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "cron": "0 0 1 1 *", "target": TARGET, **fields}


def _nested(levels: int) -> dict[str, Any]:
    document: dict[str, Any] = {"leaf": True}
    for _ in range(levels - 1):
        document = {"next": document}
    return document


def _assert_error(answer: Any, code: str, field: str | None) -> None:
    assert set(answer) == {"error"}, answer
    assert answer["error"]["code"] == code
    assert answer["error"].get("field") == field
    assert answer["error"]["message"]


def _raw_body_of(size: int) -> bytes:
    """A valid job submission padded with trailing whitespace to exactly `size` bytes."""
    body = json.dumps({"target": TARGET, "delay_s": LATER}).encode()
    return body + b" " * (size - len(body))


def test_a_body_at_the_size_limit_is_accepted_and_one_byte_more_is_413(operator: Api) -> None:
    status, job = operator.call("POST", "/v1/jobs", raw=_raw_body_of(MAX_BODY_BYTES))
    assert status == 201, job

    status, error = operator.call("POST", "/v1/jobs", raw=_raw_body_of(MAX_BODY_BYTES + 1))
    assert status == 413
    _assert_error(error, "payload_too_large", None)


@pytest.mark.parametrize("method", ["POST", "PATCH", "DELETE", "GET"])
def test_an_oversize_body_is_413_on_any_route(operator: Api, method: str) -> None:
    status, error = operator.call(
        method, "/v1/schedules/sch_unknown", raw=b" " * (MAX_BODY_BYTES + 1)
    )
    assert status == 413
    _assert_error(error, "payload_too_large", None)


def test_a_job_payload_at_the_limit_is_accepted_and_one_byte_more_is_413(operator: Api) -> None:
    job = {"target": TARGET, "delay_s": LATER}
    status, created = operator.post("/v1/jobs", {**job, "payload": _payload_of(MAX_PAYLOAD_BYTES)})
    assert status == 201, created

    status, error = operator.post(
        "/v1/jobs", {**job, "payload": _payload_of(MAX_PAYLOAD_BYTES + 1)}
    )
    assert status == 413
    _assert_error(error, "payload_too_large", "payload")


def test_a_schedule_payload_over_the_limit_is_413_on_create_and_on_update(operator: Api) -> None:
    too_big = _payload_of(MAX_PAYLOAD_BYTES + 1)
    status, error = operator.post("/v1/schedules", _schedule("limits-big", payload=too_big))
    assert status == 413
    _assert_error(error, "payload_too_large", "payload")

    status, schedule = operator.post(
        "/v1/schedules", _schedule("limits-payload", payload=_payload_of(MAX_PAYLOAD_BYTES))
    )
    assert status == 201, schedule
    status, error = operator.call("PATCH", f"/v1/schedules/{schedule['id']}", {"payload": too_big})
    assert status == 413
    _assert_error(error, "payload_too_large", "payload")
    # And the schedule keeps the payload it had
    assert operator.get(f"/v1/schedules/{schedule['id']}")[1]["version"] == schedule["version"]


def _labels(count: int) -> dict[str, str]:
    return {f"team-{i}": "payments" for i in range(count)}


def _headers(count: int) -> dict[str, str]:
    return {f"X-Custom-{i}": "yes" for i in range(count)}


def test_labels_up_to_the_limit_are_accepted_and_one_more_is_400(operator: Api) -> None:
    status, schedule = operator.post(
        "/v1/schedules", _schedule("limits-labels", labels=_labels(MAX_LABELS))
    )
    assert status == 201, schedule
    assert len(schedule["labels"]) == MAX_LABELS

    status, error = operator.call(
        "PATCH", f"/v1/schedules/{schedule['id']}", {"labels": _labels(MAX_LABELS + 1)}
    )
    assert status == 400
    _assert_error(error, "invalid_argument", "labels")
    status, error = operator.post(
        "/v1/schedules", _schedule("limits-labels-2", labels=_labels(MAX_LABELS + 1))
    )
    assert status == 400
    _assert_error(error, "invalid_argument", "labels")


@pytest.mark.parametrize(
    ("labels", "field"),
    [
        pytest.param({"": "x"}, "labels", id="empty_key"),
        pytest.param({"k" * 129: "x"}, "labels", id="key_over_128"),
        pytest.param({"team": "x" * 257}, "labels.team", id="value_over_256"),
        pytest.param({"team": 7}, "labels.team", id="value_not_a_string"),
    ],
)
def test_a_label_out_of_bounds_is_400(operator: Api, labels: dict[str, Any], field: str) -> None:
    status, error = operator.post("/v1/schedules", _schedule("limits-label", labels=labels))
    assert status == 400
    _assert_error(error, "invalid_argument", field)


@pytest.mark.parametrize("path", ["/v1/jobs", "/v1/schedules"])
def test_target_headers_up_to_the_limit_are_accepted_and_one_more_is_400(
    operator: Api, path: str
) -> None:
    def body(count: int, name: str) -> dict[str, Any]:
        target = {**TARGET, "headers": _headers(count)}
        if path == "/v1/jobs":
            return {"target": target, "delay_s": LATER}
        return _schedule(name, target=target)

    status, created = operator.post(path, body(MAX_HEADERS, "limits-headers"))
    assert status == 201, created
    assert len(created["target"]["headers"]) == MAX_HEADERS

    status, error = operator.post(path, body(MAX_HEADERS + 1, "limits-headers-2"))
    assert status == 400
    _assert_error(error, "invalid_argument", "target.headers")


def test_a_body_nested_within_the_limit_is_accepted_and_deeper_is_400(operator: Api) -> None:
    # The body itself is one level: its payload may nest one less than the limit
    job = {"target": TARGET, "delay_s": LATER}
    status, created = operator.post("/v1/jobs", {**job, "payload": _nested(MAX_JSON_DEPTH - 1)})
    assert status == 201, created

    status, error = operator.post("/v1/jobs", {**job, "payload": _nested(MAX_JSON_DEPTH)})
    assert status == 400
    _assert_error(error, "invalid_argument", None)


def test_a_body_nested_beyond_what_a_parser_can_take_is_400_not_a_crash(operator: Api) -> None:
    # Deep enough to exhaust Python's recursion limit, well within the size limit
    raw = b'{"target": {"type": "http", "url": "http://x/"}, "payload": ' + b"[" * 100_000
    raw += b"]" * 100_000 + b"}"
    status, error = operator.call("POST", "/v1/jobs", raw=raw)
    assert status == 400
    _assert_error(error, "invalid_argument", None)
