"""Secrets by reference on the local stack: the target receives the value, nothing else does.

The value is searched for in every API response the test can get, every item of every table
in the emulator and every log record the handlers wrote while the test ran.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest

from cronwheel.runtime import runtime
from cronwheel_local.stack import REGION, LocalStack
from tests.support.api import Api
from tests.support.target import RecordingTarget, wait_for

ADMIN = "acme-admin-key"


class _Records(logging.Handler):
    """Keeps every record as its handler would write it, plus all of its attributes (message
    arguments, `extra` keys, exception text), so nothing a log line could carry is missed."""

    def __init__(self, lines: list[str], formatter: logging.Formatter | None) -> None:
        super().__init__(logging.DEBUG)
        self._lines = lines
        if formatter is not None:
            self.setFormatter(formatter)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:  # a formatter that fails must not hide the record's contents
            line = record.getMessage()
        self._lines.append(line + " " + json.dumps(record.__dict__, default=repr))


@contextmanager
def handler_logs() -> Iterator[list[str]]:
    """Every record the handlers log while the block runs, at DEBUG and above.

    Powertools loggers write JSON to the stdout they saw when created, which pytest's capture
    may have swapped meanwhile; records are therefore taken at the logging layer instead: from
    each Powertools logger (with its own JSON formatter) and from the root logger (everything
    else that propagates, e.g. the local stack's workers). The handlers' loggers are lowered to
    DEBUG for the block, a stricter check than the INFO they run at on AWS; AWS SDK loggers
    keep their level (their DEBUG output is never enabled in a deployment)."""
    lines: list[str] = []
    loggers = [
        lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)
    ]
    services = {lg.name for lg in loggers if getattr(lg, "powertools_handler", None)}
    services.add(os.environ.get("POWERTOOLS_SERVICE_NAME", "service_undefined"))
    ours = [
        lg
        for lg in loggers
        if lg.name.split(".")[0] in services or lg.name.split(".")[0] == "cronwheel"
    ]
    saved_levels = {lg: lg.level for lg in ours}
    attached: list[tuple[logging.Logger, logging.Handler]] = [
        (logging.getLogger(), _Records(lines, None))
    ]
    for lg in ours:
        powertools = getattr(lg, "powertools_handler", None)
        if powertools is not None:
            attached.append((lg, _Records(lines, powertools.formatter)))
    for lg in ours:
        lg.setLevel(logging.DEBUG)
    for lg, handler in attached:
        lg.addHandler(handler)
    try:
        yield lines
    finally:
        for lg, handler in attached:
            lg.removeHandler(handler)
        for lg, level in saved_levels.items():
            lg.setLevel(level)


def _all_items(stack: LocalStack) -> list[dict[str, Any]]:
    """Every item of every table in the emulator (the stack's tables among them)."""
    dynamodb = boto3.client("dynamodb", region_name=REGION, endpoint_url=stack.endpoint_url)
    tables = dynamodb.list_tables()["TableNames"]
    assert set(runtime().settings.table_names.values()) <= set(tables)
    items: list[dict[str, Any]] = []
    for table in tables:
        for page in dynamodb.get_paginator("scan").paginate(TableName=table):
            items += page["Items"]
    return items


@pytest.fixture(scope="module")
def secrets(stack: LocalStack) -> Any:
    return boto3.client("secretsmanager", region_name=REGION, endpoint_url=stack.endpoint_url)


def _http_target(url: str, secret_name: str) -> dict[str, Any]:
    return {
        "type": "http",
        "url": url,
        "headers": {"Authorization": {"secret": secret_name}, "X-Team": "billing"},
    }


def _settled(api: Api, execution_id: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        status, doc = api.get(f"/v1/executions/{execution_id}")
        return doc if status == 200 and doc["state"] in {"succeeded", "dead"} else None

    result: dict[str, Any] = wait_for(done, timeout_s=30)
    return result


def test_the_target_gets_the_secret_and_no_response_item_or_log_line_shows_it(
    stack: LocalStack, api: Api, target: RecordingTarget, secrets: Any
) -> None:
    # Given a secret under acme's prefix, with a value that occurs nowhere else
    value = f"Bearer sv-{uuid.uuid4().hex}"
    name = f"cronwheel/acme/e2e-{uuid.uuid4().hex[:8]}"
    secrets.create_secret(Name=name, SecretString=value)
    reference = {"Authorization": {"secret": name}, "X-Team": "billing"}
    admin = api.as_key(ADMIN)
    responses: list[Any] = []

    def keep(answer: tuple[int, Any], expected: int = 200) -> Any:
        status, document = answer
        assert status == expected, document
        responses.append(document)
        return document

    with handler_logs() as logs:
        # When a job and a schedule's manual run call a target whose header references it
        job = keep(
            api.post("/v1/jobs", {"target": _http_target(f"{target.base_url}/ok", name)}), 201
        )
        schedule = keep(
            api.post(
                "/v1/schedules",
                {
                    "name": f"secrets-{uuid.uuid4().hex[:8]}",
                    "cron": "0 0 1 1 *",
                    "target": _http_target(f"{target.base_url}/ok", name),
                },
            ),
            201,
        )
        run = keep(api.post(f"/v1/schedules/{schedule['id']}:trigger"), 202)
        job_run = _settled(api, job["execution_id"])
        schedule_run = _settled(api, run["id"])

        # Then the target received the value in both calls
        assert job_run["state"] == schedule_run["state"] == "succeeded"
        for execution_id in (job["execution_id"], run["id"]):
            [call] = target.calls_for(execution_id)
            assert call.headers["Authorization"] == value
            assert call.headers["X-Team"] == "billing"

        # And every read of the records shows the reference, never the value
        got_job = keep(api.get(f"/v1/jobs/{job['id']}"))
        got_schedule = keep(api.get(f"/v1/schedules/{schedule['id']}"))
        assert got_job["target"]["headers"] == got_schedule["target"]["headers"] == reference
        keep(api.get(f"/v1/executions/{job['execution_id']}"))
        keep(api.get(f"/v1/executions/{run['id']}"))
        keep(api.get("/v1/executions?limit=500"))
        keep(api.get(f"/v1/executions?job_id={job['id']}"))
        keep(api.get(f"/v1/executions?schedule_id={schedule['id']}"))
        keep(api.get("/v1/schedules?limit=500"))
        keep(api.get(f"/v1/schedules/{schedule['id']}/next-runs"))
        keep(admin.call("DELETE", f"/v1/schedules/{schedule['id']}"), 204)
        keep(admin.get("/v1/audit"))

    # And the value is in no response, no stored item and no log record
    assert responses[0]["target"]["headers"] == reference
    assert value not in json.dumps(responses)
    assert value not in json.dumps(_all_items(stack))
    # (the capture did see the handlers at work: the dispatcher logged both executions)
    text = "\n".join(logs)
    assert job["execution_id"] in text and run["id"] in text
    assert value not in text


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("cronwheel/globex/api-token", id="other_tenant"),
        pytest.param("cronwheel/acmecorp/api-token", id="prefix_lookalike"),
        pytest.param("prod/api-token", id="outside_cronwheel"),
    ],
)
def test_a_reference_outside_the_tenant_prefix_is_a_400(
    api: Api, target: RecordingTarget, name: str
) -> None:
    # Given acme's operator / When a job, a schedule or a schedule change references a
    # secret outside cronwheel/acme/
    body = _http_target(f"{target.base_url}/ok", name)
    job_status, job = api.post("/v1/jobs", {"target": body})
    created_status, created = api.post(
        "/v1/schedules",
        {"name": f"foreign-{uuid.uuid4().hex[:8]}", "cron": "0 0 1 1 *", "target": body},
    )
    own = _http_target(f"{target.base_url}/ok", "cronwheel/acme/api-token")
    status, schedule = api.post(
        "/v1/schedules", {"name": f"own-{uuid.uuid4().hex[:8]}", "cron": "0 0 1 1 *", "target": own}
    )
    assert status == 201, schedule
    patched_status, patched = api.call("PATCH", f"/v1/schedules/{schedule['id']}", {"target": body})
    # Then each is refused with a 400 naming the header and the allowed prefix
    for status, document in (
        (job_status, job),
        (created_status, created),
        (patched_status, patched),
    ):
        assert status == 400, document
        assert document["error"]["code"] == "invalid_argument"
        assert document["error"]["field"] == "target.headers.Authorization"
        assert "cronwheel/acme/<name>" in document["error"]["message"]
    # And the schedule kept its own reference
    _, unchanged = api.get(f"/v1/schedules/{schedule['id']}")
    assert unchanged["target"]["headers"]["Authorization"] == {"secret": "cronwheel/acme/api-token"}
    api.call("DELETE", f"/v1/schedules/{schedule['id']}")


def test_a_malformed_reference_is_a_400(api: Api, target: RecordingTarget) -> None:
    status, document = api.post(
        "/v1/jobs",
        {
            "target": {
                "type": "http",
                "url": f"{target.base_url}/ok",
                "headers": {"Authorization": {"secret_name": "cronwheel/acme/x"}},
            }
        },
    )
    assert status == 400, document
    assert document["error"]["field"] == "target.headers"
    assert '{"secret": "<Secrets Manager name>"}' in document["error"]["message"]


def test_a_missing_secret_fails_the_attempt_with_a_clear_error(
    api: Api, target: RecordingTarget
) -> None:
    # Given a job whose header references a secret that does not exist
    name = f"cronwheel/acme/missing-{uuid.uuid4().hex[:8]}"
    status, job = api.post(
        "/v1/jobs",
        {
            "target": _http_target(f"{target.base_url}/ok", name),
            "retry": {"max_attempts": 1},
        },
    )
    assert status == 201, job
    # When it runs
    execution = _settled(api, job["execution_id"])
    # Then its one attempt failed saying which secret could not be read, and the target was
    # never called without it
    assert execution["state"] == "dead"
    [attempt] = execution["attempts"]
    assert attempt["outcome"] == "failed"
    assert attempt["error"] == f"secret {name} could not be read (ResourceNotFoundException)"
    assert attempt["http_status"] is None
    assert target.calls_for(job["execution_id"]) == []


def test_an_unusable_secret_value_fails_without_showing_it(
    stack: LocalStack, api: Api, target: RecordingTarget, secrets: Any
) -> None:
    # Given a secret whose value would inject a header
    value = f"sv-{uuid.uuid4().hex}\r\nX-Injected: yes"
    name = f"cronwheel/acme/bad-{uuid.uuid4().hex[:8]}"
    secrets.create_secret(Name=name, SecretString=value)
    # When a job references it
    status, job = api.post(
        "/v1/jobs",
        {"target": _http_target(f"{target.base_url}/ok", name), "retry": {"max_attempts": 1}},
    )
    assert status == 201, job
    execution = _settled(api, job["execution_id"])
    # Then the attempt failed naming the secret, the target was not called, and the value
    # appears neither in the execution nor in the stored items
    [attempt] = execution["attempts"]
    assert (
        attempt["error"]
        == f"secret {name} could not be read (its value is not a valid header value)"
    )
    assert target.calls_for(job["execution_id"]) == []
    secret_part = value.split("\r\n")[0]
    assert secret_part not in json.dumps(execution)
    assert secret_part not in json.dumps(_all_items(stack))
