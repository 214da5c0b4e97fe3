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


def test_client_returns_empty_dict_for_no_content_and_escapes_ids(api: FakeApi) -> None:
    # Given an endpoint answering 204 with no body
    api.answer("DELETE", "/v1/schedules/a%2Fb", (204, b""))

    # When deleting through the client with a path-unsafe id
    answer = ApiClient(api.url, API_KEY).request("DELETE", f"/v1/schedules/{quote_id('a/b')}")

    # Then the answer is {} and the id stayed one segment
    assert answer == {}
    assert api.requests[0].path == "/v1/schedules/a%2Fb"
