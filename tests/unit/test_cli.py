"""The `cronwheel` CLI against a fake API server: requests sent, output shown, exit codes."""

from __future__ import annotations

import json
import socket
import sys
import threading
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from cronwheel_local.cli import main
from cronwheel_local.client import ApiClient, quote_id

API_KEY = "acme-admin-key"

EXECUTION = {
    "id": "exe_01",
    "tenant": "acme",
    "job_id": "job_01",
    "scheduled_for": "2026-09-26T09:00:00Z",
    "state": "dead",
    "attempt": 2,
    "fencing_token": 7,
    "trigger": "job",
    "created_at": "2026-09-26T08:59:59Z",
    "started_at": "2026-09-26T09:00:00Z",
    "finished_at": "2026-09-26T09:00:31Z",
    "next_attempt_at": None,
    "reason": "max_attempts_reached",
    "attempts": [
        {
            "attempt": 1,
            "started_at": "2026-09-26T09:00:00Z",
            "finished_at": "2026-09-26T09:00:01Z",
            "outcome": "failed",
            "http_status": 503,
            "error": "target answered 503",
        },
        {
            "attempt": 2,
            "started_at": "2026-09-26T09:00:30Z",
            "finished_at": "2026-09-26T09:00:31Z",
            "outcome": "failed",
            "http_status": None,
            "error": "timeout after 30s",
        },
    ],
}
JOB = {
    "id": "job_01",
    "execution_id": "exe_01",
    "run_at": "2026-09-26T09:00:00Z",
    "state": "scheduled",
    "name": "nightly-report",
    "priority": "high",
    "target": {"type": "http", "url": "https://example.test/hook", "method": "PUT"},
}
SCHEDULE = {
    "id": "sch_01",
    "tenant": "acme",
    "name": "nightly-report",
    "cron": "0 9 * * MON-FRI",
    "timezone": "Europe/Paris",
    "target": {"type": "http", "url": "https://example.test/hook", "method": "POST"},
    "payload": {},
    "retry": {"max_attempts": 3, "backoff": "exponential", "initial_s": 30, "max_s": 3600},
    "concurrency": "forbid",
    "misfire": "run_once",
    "priority": "normal",
    "paused": False,
    "labels": {"team": "reports"},
    "version": 4,
    "created_at": "2026-09-01T08:00:00Z",
    "updated_at": "2026-09-20T08:00:00Z",
    "next_run_at": "2026-09-28T07:00:00Z",
    "last_run_at": "2026-09-25T07:00:00Z",
    "last_status": "succeeded",
}
NEXT_RUNS = {
    "items": [
        {"scheduled_for": "2026-09-28T07:00:00Z", "local_time": "2026-09-28T09:00:00+02:00"},
        {"scheduled_for": "2026-09-29T07:00:00Z", "local_time": "2026-09-29T09:00:00+02:00"},
    ]
}


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class FakeApi:
    """Answers canned responses per (method, path) and records every request it gets."""

    url: str = ""
    requests: list[Recorded] = field(default_factory=list)
    answers: dict[tuple[str, str], list[tuple[int, Any]]] = field(default_factory=dict)

    def answer(self, method: str, path: str, *responses: tuple[int, Any]) -> None:
        """Queue answers; the last one repeats."""
        self.answers[(method, path)] = list(responses)

    def next_answer(self, method: str, path: str) -> tuple[int, Any]:
        queued = self.answers.get((method, path))
        if not queued:
            return 404, {"error": {"code": "not_found", "message": f"no route {method} {path}"}}
        return queued.pop(0) if len(queued) > 1 else queued[0]


def _handler_for(api: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            parts = urlsplit(self.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            api.requests.append(
                Recorded(
                    method=self.command,
                    path=parts.path,
                    query=parse_qs(parts.query),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=json.loads(raw) if raw else None,
                )
            )
            status, body = api.next_answer(self.command, parts.path)
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeApi]:
    fake = FakeApi()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(fake))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    for proxy in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setenv("CRONWHEEL_URL", fake.url)
    monkeypatch.setenv("CRONWHEEL_API_KEY", API_KEY)
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# --- jobs --------------------------------------------------------------------------------------


def test_jobs_submit_http_sends_full_body_and_bearer_key(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the API accepts the job
    api.answer("POST", "/v1/jobs", (201, JOB))

    # When submitting an HTTP job with every option
    code = main(
        [
            "jobs",
            "submit",
            "--url",
            "https://example.test/hook",
            "--method",
            "put",
            "--header",
            "X-Team=reports",
            "--header",
            "X-Trace=a=b",
            "--timeout-s",
            "120",
            "--callback",
            "--payload",
            '{"report": "daily"}',
            "--run-at",
            "2026-09-26T11:00:00+02:00",
            "--name",
            "nightly-report",
            "--priority",
            "high",
            "--max-attempts",
            "5",
            "--backoff",
            "linear",
            "--idempotency-key",
            "report-2026-09-26",
        ]
    )

    # Then one POST /v1/jobs carries the contract's fields and the key
    assert code == 0
    [sent] = api.requests
    assert (sent.method, sent.path) == ("POST", "/v1/jobs")
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert sent.headers["content-type"] == "application/json"
    assert sent.body == {
        "target": {
            "type": "http",
            "url": "https://example.test/hook",
            "method": "PUT",
            "headers": {"X-Team": "reports", "X-Trace": "a=b"},
            "timeout_s": 120,
            "callback": True,
        },
        "name": "nightly-report",
        "run_at": "2026-09-26T11:00:00+02:00",
        "payload": {"report": "daily"},
        "priority": "high",
        "retry": {"max_attempts": 5, "backoff": "linear"},
        "idempotency_key": "report-2026-09-26",
    }
    # And the answer is shown as readable fields
    out = capsys.readouterr().out
    assert "job_01" in out
    assert "exe_01" in out
    assert "scheduled" in out
    assert "http PUT https://example.test/hook" in out


def test_jobs_submit_sqs_with_delay_sends_minimal_body(api: FakeApi) -> None:
    # Given the API accepts the job
    api.answer("POST", "/v1/jobs", (201, JOB))

    # When submitting to a queue with a delay
    code = main(["jobs", "submit", "--queue-url", "https://sqs.test/q", "--delay-s", "90"])

    # Then only the given fields are sent
    assert code == 0
    assert api.requests[0].body == {
        "target": {"type": "sqs", "queue_url": "https://sqs.test/q"},
        "delay_s": 90,
    }


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param(
            ["--queue-url", "https://sqs.test/q", "--method", "GET"], id="http_flag_on_sqs"
        ),
        pytest.param(["--url", "http://x.test", "--payload", "{not json"], id="payload_not_json"),
        pytest.param(["--url", "http://x.test", "--payload", "[1]"], id="payload_not_object"),
        pytest.param(["--url", "http://x.test", "--header", "no-equals"], id="header_not_k_v"),
        pytest.param(["--url", "http://x.test", "--delay-s", "-1"], id="negative_delay"),
        pytest.param(
            ["--url", "http://x.test", "--queue-url", "https://sqs.test/q"], id="two_targets"
        ),
        pytest.param(["--payload", "{}"], id="no_target"),
    ],
)
def test_jobs_submit_bad_arguments_exit_2_without_a_request(
    api: FakeApi, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    # Given arguments that cannot make a valid job
    # When submitting
    code = main(["jobs", "submit", *extra])

    # Then it is a usage error and nothing reaches the API
    assert code == 2
    assert api.requests == []
    assert "error" in capsys.readouterr().err


def test_jobs_get_fetches_by_escaped_id(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a stored job
    api.answer("GET", "/v1/jobs/job_01", (200, JOB))

    # When getting it
    code = main(["jobs", "get", "job_01"])

    # Then GET /v1/jobs/{id} was called and the fields are shown
    assert code == 0
    assert [(r.method, r.path, r.body) for r in api.requests] == [("GET", "/v1/jobs/job_01", None)]
    out = capsys.readouterr().out
    for value in ("job_01", "nightly-report", "scheduled", "2026-09-26T09:00:00Z", "high"):
        assert value in out


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["jobs", "get", "job_01", "--json"], id="after_subcommand"),
        pytest.param(["--json", "jobs", "get", "job_01"], id="before_subcommand"),
        pytest.param(["jobs", "--json", "get", "job_01"], id="between_group_and_action"),
    ],
)
def test_json_flag_prints_the_api_answer_unchanged(
    api: FakeApi, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    # Given a stored job
    api.answer("GET", "/v1/jobs/job_01", (200, JOB))

    # When getting it with --json anywhere on the line
    code = main(argv)

    # Then stdout is exactly the server's JSON
    assert code == 0
    assert json.loads(capsys.readouterr().out) == JOB


# --- executions --------------------------------------------------------------------------------


def test_executions_list_sends_filters_and_prints_a_table(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given one page of executions with more to come
    listing = {"items": [EXECUTION], "next_cursor": "c2"}
    api.answer("GET", "/v1/executions", (200, listing))

    # When listing with filters
    code = main(
        [
            "executions",
            "list",
            "--job-id",
            "job_01",
            "--status",
            "dead",
            "--since",
            "2026-09-26T00:00:00Z",
            "--limit",
            "10",
        ]
    )

    # Then the filters are query parameters and unset ones are absent
    assert code == 0
    [sent] = api.requests
    assert (sent.method, sent.path) == ("GET", "/v1/executions")
    assert sent.query == {
        "job_id": ["job_01"],
        "status": ["dead"],
        "since": ["2026-09-26T00:00:00Z"],
        "limit": ["10"],
    }
    # And the table has the headers and the row's values, plus a hint for the next page
    out = capsys.readouterr().out
    header, row = out.splitlines()[:2]
    for title in ("ID", "STATE", "ATTEMPT", "SCHEDULED FOR", "TRIGGER", "REASON"):
        assert title in header
    for value in ("exe_01", "dead", "2", "2026-09-26T09:00:00Z", "job", "max_attempts_reached"):
        assert value in row
    assert header.index("STATE") == row.index("dead")
    assert "--cursor c2" in out


def test_executions_list_all_follows_next_cursor(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given two pages
    second = {**EXECUTION, "id": "exe_02", "state": "succeeded", "reason": None}
    api.answer(
        "GET",
        "/v1/executions",
        (200, {"items": [EXECUTION], "next_cursor": "c2"}),
        (200, {"items": [second], "next_cursor": None}),
    )

    # When listing everything as JSON
    code = main(["executions", "list", "--all", "--limit", "1", "--json"])

    # Then the second request carries the cursor and both pages are printed
    assert code == 0
    assert [r.query for r in api.requests] == [
        {"limit": ["1"]},
        {"limit": ["1"], "cursor": ["c2"]},
    ]
    assert json.loads(capsys.readouterr().out) == {
        "items": [EXECUTION, second],
        "next_cursor": None,
    }


def test_executions_list_empty_says_so(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    # Given no executions
    api.answer("GET", "/v1/executions", (200, {"items": [], "next_cursor": None}))

    # When listing
    code = main(["executions", "list"])

    # Then a plain sentence replaces the table
    assert code == 0
    assert capsys.readouterr().out.strip() == "no executions"


def test_executions_get_shows_fields_and_attempts(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a dead execution with two attempts
    api.answer("GET", "/v1/executions/exe_01", (200, EXECUTION))

    # When getting it
    code = main(["executions", "get", "exe_01"])

    # Then the execution and an attempts table are printed
    assert code == 0
    assert [(r.method, r.path) for r in api.requests] == [("GET", "/v1/executions/exe_01")]
    out = capsys.readouterr().out
    for value in ("exe_01", "dead", "max_attempts_reached", "job_01", "ATTEMPTS", "OUTCOME"):
        assert value in out
    for value in ("target answered 503", "503", "timeout after 30s"):
        assert value in out


# --- schedules ---------------------------------------------------------------------------------


def test_schedules_create_sends_every_given_field(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the API accepts the schedule
    api.answer("POST", "/v1/schedules", (201, SCHEDULE))

    # When creating a cron schedule with every option
    code = main(
        [
            "schedules",
            "create",
            "nightly-report",
            "--cron",
            "0 9 * * MON-FRI",
            "--tz",
            "Europe/Paris",
            "--start-at",
            "2026-09-01T00:00:00Z",
            "--end-at",
            "2027-09-01T00:00:00Z",
            "--url",
            "https://example.test/hook",
            "--method",
            "put",
            "--header",
            "X-Team=reports",
            "--timeout-s",
            "60",
            "--payload",
            '{"report": "daily"}',
            "--max-attempts",
            "5",
            "--backoff",
            "fixed",
            "--initial-s",
            "10",
            "--max-s",
            "600",
            "--concurrency",
            "replace",
            "--misfire",
            "catch_up",
            "--catch-up-limit",
            "20",
            "--misfire-grace-s",
            "120",
            "--jitter-s",
            "30",
            "--priority",
            "high",
            "--paused",
            "--description",
            "weekday report",
            "--label",
            "team=reports",
            "--label",
            "tier=gold",
        ]
    )

    # Then one POST /v1/schedules carries the contract's field names
    assert code == 0
    [sent] = api.requests
    assert (sent.method, sent.path) == ("POST", "/v1/schedules")
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert sent.body == {
        "name": "nightly-report",
        "cron": "0 9 * * MON-FRI",
        "timezone": "Europe/Paris",
        "start_at": "2026-09-01T00:00:00Z",
        "end_at": "2027-09-01T00:00:00Z",
        "target": {
            "type": "http",
            "url": "https://example.test/hook",
            "method": "PUT",
            "headers": {"X-Team": "reports"},
            "timeout_s": 60,
        },
        "payload": {"report": "daily"},
        "retry": {"max_attempts": 5, "backoff": "fixed", "initial_s": 10, "max_s": 600},
        "concurrency": "replace",
        "misfire": "catch_up",
        "catch_up_limit": 20,
        "misfire_grace_s": 120,
        "jitter_s": 30,
        "priority": "high",
        "paused": True,
        "description": "weekday report",
        "labels": {"team": "reports", "tier": "gold"},
    }
    # And the answer is shown as readable fields
    out = capsys.readouterr().out
    for value in ("sch_01", "cron 0 9 * * MON-FRI", "Europe/Paris", "succeeded", "4"):
        assert value in out
    assert "http POST https://example.test/hook" in out


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        pytest.param(["--rate", "5 minutes"], {"rate": "5 minutes"}, id="rate"),
        pytest.param(["--after", "sch_00"], {"after": "sch_00"}, id="after"),
    ],
)
def test_schedules_create_sends_only_the_fields_given(
    api: FakeApi, when: list[str], expected: dict[str, str]
) -> None:
    # Given the API accepts the schedule
    api.answer("POST", "/v1/schedules", (201, SCHEDULE))

    # When creating with a queue target and nothing else
    code = main(["schedules", "create", "poll", *when, "--queue-url", "https://sqs.test/q"])

    # Then the API defaults are left to the API
    assert code == 0
    assert api.requests[0].body == {
        "name": "poll",
        **expected,
        "target": {"type": "sqs", "queue_url": "https://sqs.test/q"},
    }


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param(["--url", "http://x.test"], id="no_cron_rate_or_after"),
        pytest.param(
            ["--cron", "@daily", "--rate", "1 hour", "--url", "http://x.test"], id="two_whens"
        ),
        pytest.param(["--cron", "@daily"], id="no_target"),
        pytest.param(
            ["--cron", "@daily", "--queue-url", "https://sqs.test/q", "--timeout-s", "5"],
            id="http_flag_on_sqs",
        ),
        pytest.param(
            ["--cron", "@daily", "--url", "http://x.test", "--label", "team"], id="label_not_k_v"
        ),
        pytest.param(
            ["--cron", "@daily", "--url", "http://x.test", "--misfire", "later"],
            id="unknown_misfire",
        ),
    ],
)
def test_schedules_create_bad_arguments_exit_2_without_a_request(
    api: FakeApi, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    # Given arguments that cannot make a valid schedule
    # When creating
    code = main(["schedules", "create", "nightly", *extra])

    # Then it is a usage error and nothing reaches the API
    assert code == 2
    assert api.requests == []
    assert "error" in capsys.readouterr().err


def test_schedules_list_sends_filters_and_prints_a_table(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given one page with a cron, a rate and a dependent schedule, and more to come
    rate = {**SCHEDULE, "id": "sch_02", "name": "poll", "cron": None, "rate": "5 minutes"}
    after = {
        **SCHEDULE,
        "id": "sch_03",
        "name": "follow-up",
        "cron": None,
        "after": "sch_01",
        "paused": True,
        "next_run_at": None,
        "last_status": None,
    }
    listing = {"items": [SCHEDULE, rate, after], "next_cursor": "c2"}
    api.answer("GET", "/v1/schedules", (200, listing))

    # When listing with filters
    code = main(
        ["schedules", "list", "--paused", "false", "--name-prefix", "night", "--limit", "3"]
    )

    # Then the filters use the API's names and unset ones are absent
    assert code == 0
    [sent] = api.requests
    assert (sent.method, sent.path) == ("GET", "/v1/schedules")
    assert sent.query == {"paused": ["false"], "name_prefix": ["night"], "limit": ["3"]}
    # And each row says how it fires, in columns under their titles
    out = capsys.readouterr().out
    header, first, second, third = out.splitlines()[:4]
    assert header.split("  ")[0] == "ID"
    for title in ("NAME", "SCHEDULE", "TZ", "PAUSED", "NEXT RUN", "LAST STATUS"):
        assert title in header
    assert first.index("cron 0 9 * * MON-FRI") == header.index("SCHEDULE")
    assert "rate 5 minutes" in second
    assert "after sch_01" in third
    assert first.index("no") == header.index("PAUSED")
    assert third.index("yes") == header.index("PAUSED")
    assert first.index("2026-09-28T07:00:00Z") == header.index("NEXT RUN")
    assert "succeeded" in first
    assert "--cursor c2" in out


def test_schedules_get_shows_fields(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a stored schedule
    api.answer("GET", "/v1/schedules/sch_01", (200, SCHEDULE))

    # When getting it
    code = main(["schedules", "get", "sch_01"])

    # Then GET /v1/schedules/{id} was called and the fields are shown
    assert code == 0
    assert [(r.method, r.path, r.body) for r in api.requests] == [
        ("GET", "/v1/schedules/sch_01", None)
    ]
    out = capsys.readouterr().out
    for value in ("nightly-report", "Europe/Paris", "run_once", '{"team": "reports"}'):
        assert value in out


def test_schedules_update_patches_given_fields_with_if_match(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the API accepts the change
    changed = {**SCHEDULE, "cron": "0 10 * * *", "paused": True, "version": 5}
    api.answer("PATCH", "/v1/schedules/sch_01", (200, changed))

    # When updating a few fields against a known version
    code = main(
        [
            "schedules",
            "update",
            "sch_01",
            "--cron",
            "0 10 * * *",
            "--paused",
            "--max-attempts",
            "2",
            "--if-match",
            "4",
        ]
    )

    # Then PATCH carries only those fields and the version as If-Match
    assert code == 0
    [sent] = api.requests
    assert (sent.method, sent.path) == ("PATCH", "/v1/schedules/sch_01")
    assert sent.headers["if-match"] == "4"
    assert sent.body == {"cron": "0 10 * * *", "paused": True, "retry": {"max_attempts": 2}}
    assert "cron 0 10 * * *" in capsys.readouterr().out


def test_schedules_update_without_if_match_sends_no_precondition(api: FakeApi) -> None:
    # Given the API accepts the change
    api.answer("PATCH", "/v1/schedules/sch_01", (200, SCHEDULE))

    # When renaming, resuming and replacing the target
    code = main(
        [
            "schedules",
            "update",
            "sch_01",
            "--name",
            "renamed",
            "--no-paused",
            "--queue-url",
            "https://sqs.test/q",
        ]
    )

    # Then there is no If-Match header and paused is an explicit false
    assert code == 0
    [sent] = api.requests
    assert "if-match" not in sent.headers
    assert sent.body == {
        "name": "renamed",
        "target": {"type": "sqs", "queue_url": "https://sqs.test/q"},
        "paused": False,
    }


def test_schedules_update_stale_version_exits_1(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the schedule moved on since version 3
    error = {"code": "failed_precondition", "message": "version is 4, not 3"}
    api.answer("PATCH", "/v1/schedules/sch_01", (412, {"error": error}))

    # When updating against version 3
    code = main(["schedules", "update", "sch_01", "--jitter-s", "5", "--if-match", "3"])

    # Then the precondition failure is reported
    assert code == 1
    assert capsys.readouterr().err == "error: failed_precondition: version is 4, not 3\n"


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param([], id="nothing_to_update"),
        pytest.param(["--if-match", "4"], id="only_if_match"),
        pytest.param(["--method", "PUT"], id="http_detail_without_url"),
        pytest.param(["--if-match", "v4", "--paused"], id="version_not_a_number"),
    ],
)
def test_schedules_update_bad_arguments_exit_2_without_a_request(
    api: FakeApi, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    # Given an update that says nothing sendable
    # When updating
    code = main(["schedules", "update", "sch_01", *extra])

    # Then it is a usage error and nothing reaches the API
    assert code == 2
    assert api.requests == []
    assert "error" in capsys.readouterr().err


def test_schedules_delete_prints_deleted(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    # Given the API deletes with 204 and no body
    api.answer("DELETE", "/v1/schedules/sch_01", (204, b""))

    # When deleting
    code = main(["schedules", "delete", "sch_01"])

    # Then DELETE was sent and one line confirms it
    assert code == 0
    assert [(r.method, r.path, r.body) for r in api.requests] == [
        ("DELETE", "/v1/schedules/sch_01", None)
    ]
    assert capsys.readouterr().out == "deleted sch_01\n"


@pytest.mark.parametrize("verb", ["pause", "resume"])
def test_schedules_pause_and_resume_post_the_custom_method(
    api: FakeApi, capsys: pytest.CaptureFixture[str], verb: str
) -> None:
    # Given the API answers with the schedule
    api.answer("POST", f"/v1/schedules/sch_01:{verb}", (200, {**SCHEDULE, "paused": True}))

    # When pausing or resuming
    code = main(["schedules", verb, "sch_01"])

    # Then the colon reached the server literally, not as %3A
    assert code == 0
    [sent] = api.requests
    assert (sent.method, sent.path) == ("POST", f"/v1/schedules/sch_01:{verb}")
    assert "sch_01" in capsys.readouterr().out


def test_schedules_custom_method_escapes_only_the_id(api: FakeApi) -> None:
    # Given an id holding path-unsafe characters
    api.answer("POST", "/v1/schedules/a%2Fb%3Ac:pause", (200, SCHEDULE))

    # When pausing it
    code = main(["schedules", "pause", "a/b:c"])

    # Then the id's own slash and colon are escaped and the method's colon is not
    assert code == 0
    assert api.requests[0].path == "/v1/schedules/a%2Fb%3Ac:pause"


def test_schedules_trigger_prints_the_new_execution(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the API starts a manual run
    execution = {
        **EXECUTION,
        "id": "exe_09",
        "job_id": None,
        "schedule_id": "sch_01",
        "state": "pending",
        "attempt": 0,
        "trigger": "manual",
        "reason": None,
        "attempts": [],
    }
    api.answer("POST", "/v1/schedules/sch_01:trigger", (202, execution))

    # When triggering
    code = main(["schedules", "trigger", "sch_01"])

    # Then POST :trigger was sent and the execution is shown
    assert code == 0
    assert [(r.method, r.path) for r in api.requests] == [("POST", "/v1/schedules/sch_01:trigger")]
    out = capsys.readouterr().out
    for value in ("exe_09", "pending", "manual", "sch_01", "no attempts yet"):
        assert value in out


@pytest.mark.parametrize(
    ("extra", "count"),
    [
        pytest.param([], "5", id="default_count"),
        pytest.param(["--count", "2"], "2", id="explicit_count"),
    ],
)
def test_schedules_next_runs_prints_utc_and_local_times(
    api: FakeApi, capsys: pytest.CaptureFixture[str], extra: list[str], count: str
) -> None:
    # Given the next two fire times
    api.answer("GET", "/v1/schedules/sch_01/next-runs", (200, NEXT_RUNS))

    # When asking for them
    code = main(["schedules", "next-runs", "sch_01", *extra])

    # Then the count is a query parameter and both times are in the table
    assert code == 0
    [sent] = api.requests
    assert (sent.method, sent.path, sent.query) == (
        "GET",
        "/v1/schedules/sch_01/next-runs",
        {"count": [count]},
    )
    header, first, second = capsys.readouterr().out.splitlines()
    assert header.startswith("SCHEDULED FOR (UTC)")
    assert "LOCAL TIME" in header
    assert first.split() == ["2026-09-28T07:00:00Z", "2026-09-28T09:00:00+02:00"]
    assert second.split() == ["2026-09-29T07:00:00Z", "2026-09-29T09:00:00+02:00"]


@pytest.mark.parametrize(
    ("argv", "method", "path", "answer"),
    [
        pytest.param(
            ["schedules", "get", "sch_01"], "GET", "/v1/schedules/sch_01", SCHEDULE, id="get"
        ),
        pytest.param(
            ["schedules", "list"],
            "GET",
            "/v1/schedules",
            {"items": [SCHEDULE], "next_cursor": None},
            id="list",
        ),
        pytest.param(
            ["schedules", "resume", "sch_01"],
            "POST",
            "/v1/schedules/sch_01:resume",
            SCHEDULE,
            id="resume",
        ),
        pytest.param(
            ["schedules", "next-runs", "sch_01"],
            "GET",
            "/v1/schedules/sch_01/next-runs",
            NEXT_RUNS,
            id="next_runs",
        ),
        pytest.param(
            ["cron", "preview", "@daily"], "POST", "/v1/cron:preview", NEXT_RUNS, id="preview"
        ),
    ],
)
def test_new_commands_print_the_api_answer_unchanged_with_json(
    api: FakeApi,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    method: str,
    path: str,
    answer: dict[str, Any],
) -> None:
    # Given the API's answer
    api.answer(method, path, (200, answer))

    # When running the command with --json
    code = main([*argv, "--json"])

    # Then stdout is exactly that answer
    assert code == 0
    assert json.loads(capsys.readouterr().out) == answer


# --- cron --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(
            ["0 2 * * *"],
            {"cron": "0 2 * * *", "timezone": "UTC", "count": 5},
            id="cron_defaults",
        ),
        pytest.param(
            [
                "0 2 * * *",
                "--tz",
                "Europe/Paris",
                "--count",
                "3",
                "--after",
                "2026-03-27T00:00:00Z",
            ],
            {
                "cron": "0 2 * * *",
                "timezone": "Europe/Paris",
                "count": 3,
                "after": "2026-03-27T00:00:00Z",
            },
            id="cron_every_option",
        ),
        pytest.param(
            ["90 minutes", "--rate"],
            {"rate": "90 minutes", "timezone": "UTC", "count": 5},
            id="rate",
        ),
    ],
)
def test_cron_preview_posts_the_expression(
    api: FakeApi, argv: list[str], expected: dict[str, Any]
) -> None:
    # Given the API previews anything
    api.answer("POST", "/v1/cron:preview", (200, {"items": []}))

    # When previewing
    code = main(["cron", "preview", *argv])

    # Then the colon path is literal and the body names the expression's kind
    assert code == 0
    [sent] = api.requests
    assert (sent.method, sent.path) == ("POST", "/v1/cron:preview")
    assert sent.body == expected


def _runs(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {"items": [{"scheduled_for": utc, "local_time": local} for utc, local in pairs]}


@pytest.mark.parametrize(
    ("answer", "notes"),
    [
        pytest.param(
            _runs(
                ("2026-03-28T01:00:00Z", "2026-03-28T02:00:00+01:00"),
                ("2026-03-29T01:00:00Z", "2026-03-29T03:00:00+02:00"),
                ("2026-03-30T00:00:00Z", "2026-03-30T02:00:00+02:00"),
            ),
            [None, "DST: offset +01:00 -> +02:00", None],
            id="spring_gap_shift_paris",
        ),
        pytest.param(
            _runs(
                ("2026-10-24T23:30:00Z", "2026-10-25T01:30:00+02:00"),
                ("2026-10-25T00:30:00Z", "2026-10-25T02:30:00+02:00"),
                ("2026-10-25T01:30:00Z", "2026-10-25T02:30:00+01:00"),
            ),
            [None, None, "DST: offset +02:00 -> +01:00"],
            id="fall_repeat_paris",
        ),
        pytest.param(
            _runs(
                ("2026-03-07T14:00:00Z", "2026-03-07T09:00:00-05:00"),
                ("2026-03-08T13:00:00Z", "2026-03-08T09:00:00-04:00"),
            ),
            [None, "DST: offset -05:00 -> -04:00"],
            id="spring_negative_offsets_new_york",
        ),
        pytest.param(
            _runs(
                ("2026-04-04T13:00:00Z", "2026-04-05T00:00:00+11:00"),
                ("2026-04-05T13:30:00Z", "2026-04-06T00:00:00+10:30"),
            ),
            [None, "DST: offset +11:00 -> +10:30"],
            id="half_hour_shift_lord_howe",
        ),
        pytest.param(
            _runs(
                ("2026-03-28T01:00:00Z", "2026-03-28T01:00:00Z"),
                ("2026-03-29T01:00:00Z", "2026-03-29T01:00:00+00:00"),
            ),
            [None, None],
            id="utc_no_change",
        ),
        pytest.param(
            _runs(
                ("2026-03-28T01:00:00Z", "2026-03-28T02:00:00+01:00"),
                ("2026-03-29T01:00:00Z", "not a time"),
                ("2026-03-30T00:00:00Z", "2026-03-30T02:00:00+02:00"),
            ),
            [None, None, "DST: offset +01:00 -> +02:00"],
            id="unparseable_local_time_skipped",
        ),
    ],
)
def test_cron_preview_notes_utc_offset_changes(
    api: FakeApi,
    capsys: pytest.CaptureFixture[str],
    answer: dict[str, Any],
    notes: list[str | None],
) -> None:
    # Given fire times around a change of UTC offset
    api.answer("POST", "/v1/cron:preview", (200, answer))

    # When previewing
    code = main(["cron", "preview", "0 2 * * *", "--tz", "Europe/Paris"])

    # Then each row carries a note exactly where the offset changed, under NOTE
    assert code == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split() == ["SCHEDULED", "FOR", "(UTC)", "LOCAL", "TIME", "NOTE"]
    assert len(rows) == len(notes)
    for row, item, note in zip(rows, answer["items"], notes, strict=True):
        assert row.startswith(item["scheduled_for"])
        assert item["local_time"] in row
        if note is None:
            assert row.endswith("-")
        else:
            assert row[header.index("NOTE") :] == note


def test_cron_preview_invalid_expression_exits_1(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the API rejects the expression
    error = {"code": "invalid_argument", "message": "minute 61 out of range", "field": "cron"}
    api.answer("POST", "/v1/cron:preview", (400, {"error": error}))

    # When previewing it
    code = main(["cron", "preview", "61 * * * *"])

    # Then the API's reason is reported
    assert code == 1
    assert "minute 61 out of range (field: cron)" in capsys.readouterr().err


# --- errors and configuration ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        pytest.param(
            {"code": "invalid_argument", "message": "run_at is in the past", "field": "run_at"},
            "error: invalid_argument: run_at is in the past (field: run_at)\n",
            id="with_field",
        ),
        pytest.param(
            {"code": "conflict", "message": "idempotency key reused with another body"},
            "error: conflict: idempotency key reused with another body\n",
            id="without_field",
        ),
    ],
)
def test_api_error_prints_code_message_field_and_exits_1(
    api: FakeApi, capsys: pytest.CaptureFixture[str], error: dict[str, str], expected: str
) -> None:
    # Given the API rejects the job
    api.answer("POST", "/v1/jobs", (400, {"error": error}))

    # When submitting
    code = main(["jobs", "submit", "--url", "http://x.test", "--run-at", "2000-01-01T00:00:00Z"])

    # Then the error is one line on stderr, nothing on stdout
    assert code == 1
    captured = capsys.readouterr()
    assert captured.err == expected
    assert captured.out == ""


def test_non_json_error_answer_still_exits_1(
    api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given something in front of the API answers with HTML
    api.answer("GET", "/v1/jobs/job_01", (502, b"<html>Bad Gateway</html>"))

    # When getting a job
    code = main(["jobs", "get", "job_01"])

    # Then the status is reported without a traceback
    assert code == 1
    assert capsys.readouterr().err.startswith("error: http_502: ")


def test_unreachable_api_exits_2_naming_the_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], closed_port_url: str
) -> None:
    # Given nothing listens at the configured URL
    monkeypatch.setenv("CRONWHEEL_URL", closed_port_url)
    monkeypatch.setenv("CRONWHEEL_API_KEY", API_KEY)

    # When calling the API
    code = main(["executions", "list"])

    # Then a clear message names the URL and suggests starting the stack
    assert code == 2
    err = capsys.readouterr().err
    assert closed_port_url in err
    assert "cronwheel local" in err
    assert "Traceback" not in err


def test_missing_api_key_exits_2_without_a_request(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given no key in the environment or on the command line
    monkeypatch.delenv("CRONWHEEL_API_KEY")

    # When calling the API
    code = main(["jobs", "get", "job_01"])

    # Then it says how to provide one and sends nothing
    assert code == 2
    assert "CRONWHEEL_API_KEY" in capsys.readouterr().err
    assert api.requests == []


def test_flags_override_environment(api: FakeApi, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the environment points somewhere else with another key
    monkeypatch.setenv("CRONWHEEL_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("CRONWHEEL_API_KEY", "env-key")
    api.answer("GET", "/v1/jobs/job_01", (200, JOB))

    # When passing --api-url and --api-key after the subcommand
    code = main(["jobs", "get", "job_01", "--api-url", api.url + "/", "--api-key", "flag-key"])

    # Then the flags win
    assert code == 0
    assert api.requests[0].headers["authorization"] == "Bearer flag-key"
    assert api.requests[0].path == "/v1/jobs/job_01"


def test_api_url_without_scheme_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a URL missing its scheme
    monkeypatch.setenv("CRONWHEEL_URL", "localhost:8080")
    monkeypatch.setenv("CRONWHEEL_API_KEY", API_KEY)

    # When calling the API
    code = main(["jobs", "get", "job_01"])

    # Then the URL is reported, not a traceback
    assert code == 2
    assert "localhost:8080" in capsys.readouterr().err


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    # Given / When no subcommand
    code = main([])

    # Then argparse's usage message and exit 2
    assert code == 2
    assert "usage: cronwheel" in capsys.readouterr().err


# --- local stack -------------------------------------------------------------------------------


@pytest.fixture
def fake_stack(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def serve(**kwargs: Any) -> int:
        calls.append(kwargs)
        return 3

    module = types.ModuleType("cronwheel_local.stack")
    module.serve = serve  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cronwheel_local.stack", module)
    return calls


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(
            ["local"],
            {"host": "127.0.0.1", "port": 8080, "config_path": None, "demo": False},
            id="defaults",
        ),
        pytest.param(
            ["local", "--host", "0.0.0.0", "--port", "9090", "--config", "dev.json"],
            {"host": "0.0.0.0", "port": 9090, "config_path": "dev.json", "demo": False},
            id="explicit",
        ),
    ],
)
def test_local_runs_the_stack_and_returns_its_exit_code(
    fake_stack: list[dict[str, Any]], argv: list[str], expected: dict[str, Any]
) -> None:
    # Given a stack module whose serve returns 3
    # When running `cronwheel local`
    code = main(argv)

    # Then serve got the options and its code is returned
    assert fake_stack == [expected]
    assert code == 3


def test_local_without_the_stack_module_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the stack cannot be imported
    monkeypatch.setitem(sys.modules, "cronwheel_local.stack", None)

    # When running `cronwheel local`
    code = main(["local"])

    # Then a clear message, no traceback
    assert code == 2
    assert "local stack cannot start" in capsys.readouterr().err


def test_client_commands_work_without_the_stack_module(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the stack cannot be imported
    monkeypatch.setitem(sys.modules, "cronwheel_local.stack", None)
    api.answer("GET", "/v1/jobs/job_01", (200, JOB))

    # When using a client command
    code = main(["jobs", "get", "job_01"])

    # Then it works
    assert code == 0


# --- client ------------------------------------------------------------------------------------


def test_client_sends_extra_headers_without_replacing_the_key(api: FakeApi) -> None:
    # Given any answer
    api.answer("GET", "/v1/tenant", (200, {}))

    # When a caller adds a header and tries to override Authorization
    ApiClient(api.url, API_KEY).request(
        "GET", "/v1/tenant", headers={"If-Match": "7", "Authorization": "Bearer other"}
    )

    # Then the extra header is sent and the client's key still wins
    sent = api.requests[0].headers
    assert sent["if-match"] == "7"
    assert sent["authorization"] == f"Bearer {API_KEY}"


def test_client_returns_empty_dict_for_no_content_and_escapes_ids(api: FakeApi) -> None:
    # Given an endpoint answering 204 with no body
    api.answer("DELETE", "/v1/schedules/a%2Fb", (204, b""))

    # When deleting through the client with a path-unsafe id
    answer = ApiClient(api.url, API_KEY).request("DELETE", f"/v1/schedules/{quote_id('a/b')}")

    # Then the answer is {} and the id stayed one segment
    assert answer == {}
    assert api.requests[0].path == "/v1/schedules/a%2Fb"
