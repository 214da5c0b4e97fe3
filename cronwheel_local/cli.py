"""The `cronwheel` command line: the local stack, and a client for the REST API.

Each resource group is one `_add_<group>` function that registers its subcommands; a client
subcommand is a pair of functions bound with `_bind`: one calls the API and returns the JSON
answer, the other prints that answer for people (`--json` prints it unchanged instead).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cronwheel_local.client import ApiClient, ApiError, ApiUnreachableError, quote_id

DEFAULT_API_URL = "http://127.0.0.1:8080"
URL_ENV = "CRONWHEEL_URL"
KEY_ENV = "CRONWHEEL_API_KEY"

EXIT_OK = 0
EXIT_API_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

RETRY_FIELDS = ("max_attempts", "backoff", "initial_s", "max_s")
MAX_CELL = 60

Answer = dict[str, Any]
Call = Callable[[ApiClient, argparse.Namespace], Answer]
Show = Callable[[Answer], None]
Column = tuple[str, Callable[[Answer], Any]]


class UsageError(Exception):
    """Arguments that parse but do not make sense together."""


@dataclass(frozen=True)
class ApiCommand:
    call: Call
    show: Show


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return int(args.run(args))
    except UsageError as exc:
        _fail(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away; silence the flush at interpreter exit.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_API_ERROR


def build_parser() -> argparse.ArgumentParser:
    common = _common_options()
    parser = argparse.ArgumentParser(
        prog="cronwheel",
        description="cronwheel: multi-tenant job scheduler. Run the local stack or call the API.",
        parents=[common],
    )
    groups = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_local(groups)
    _add_jobs(groups, common)
    _add_executions(groups, common)
    return parser


def _common_options() -> argparse.ArgumentParser:
    # SUPPRESS keeps a subcommand's unset flag from overwriting one given before the subcommand,
    # so `cronwheel --json jobs get X` and `cronwheel jobs get X --json` both work.
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("API client options")
    group.add_argument(
        "--api-url",
        default=argparse.SUPPRESS,
        metavar="URL",
        help=f"API base URL (default: ${URL_ENV} or {DEFAULT_API_URL})",
    )
    group.add_argument(
        "--api-key",
        default=argparse.SUPPRESS,
        metavar="KEY",
        help=f"API key (default: ${KEY_ENV})",
    )
    group.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print the API's JSON answer instead of a table",
    )
    return common


def _bind(parser: argparse.ArgumentParser, call: Call, show: Show) -> None:
    parser.set_defaults(run=functools.partial(_run_api, ApiCommand(call, show)))


def _run_api(command: ApiCommand, args: argparse.Namespace) -> int:
    base_url = getattr(args, "api_url", None) or os.environ.get(URL_ENV) or DEFAULT_API_URL
    api_key = getattr(args, "api_key", None) or os.environ.get(KEY_ENV)
    if not api_key:
        _fail(
            f"no API key: set {KEY_ENV} or pass --api-key "
            "(`cronwheel local` prints a development key when it starts)"
        )
        return EXIT_USAGE
    try:
        client = ApiClient(base_url, api_key)
    except ValueError as exc:
        _fail(str(exc))
        return EXIT_USAGE
    try:
        answer = command.call(client, args)
    except ApiError as exc:
        field = f" (field: {exc.field})" if exc.field else ""
        _fail(f"{exc.code}: {exc.message}{field}")
        return EXIT_API_ERROR
    except ApiUnreachableError as exc:
        _fail(
            f"cannot reach the cronwheel API at {exc.url} ({exc.reason}). Is the stack running? "
            f"Start it with `cronwheel local`, or point {URL_ENV} / --api-url at it."
        )
        return EXIT_USAGE
    if getattr(args, "json", False):
        print(json.dumps(answer, indent=2))
    else:
        command.show(answer)
    return EXIT_OK


def _fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


# --- local -------------------------------------------------------------------------------------


def _add_local(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    local = groups.add_parser(
        "local",
        help="serve the API and run the scheduler locally on the embedded emulator",
        description="Serve the API and run tick, dispatch and sweeper until SIGINT/SIGTERM.",
    )
    local.add_argument("--host", default="127.0.0.1", help="address to listen on (%(default)s)")
    local.add_argument("--port", type=int, default=8080, help="port to listen on (%(default)s)")
    local.add_argument(
        "--config",
        metavar="FILE",
        help="JSON config with tenants and keys (default: write a development config)",
    )
    local.add_argument(
        "--demo", action="store_true", help="submit a demo job to a local target once started"
    )
    local.set_defaults(run=_run_local)


def _run_local(args: argparse.Namespace) -> int:
    # Imported here so the client commands work without the local extra installed.
    try:
        from cronwheel_local.stack import serve
    except ImportError as exc:
        _fail(f"the local stack cannot start ({exc}); it needs: pip install 'cronwheel[local]'")
        return EXIT_USAGE
    return int(
        serve(host=args.host, port=args.port, config_path=args.config or None, demo=args.demo)
    )


# --- jobs --------------------------------------------------------------------------------------


def _add_jobs(
    groups: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    jobs = groups.add_parser("jobs", help="one-off and delayed jobs", parents=[common])
    actions = jobs.add_subparsers(dest="action", required=True, metavar="ACTION")

    submit = actions.add_parser("submit", help="submit a job (POST /v1/jobs)", parents=[common])
    _add_target_options(submit)
    submit.add_argument("--payload", type=_json_object, metavar="JSON", help="JSON object")
    when = submit.add_mutually_exclusive_group()
    when.add_argument("--run-at", metavar="INSTANT", help="RFC 3339 instant (default: now)")
    when.add_argument("--delay-s", type=_non_negative_int, metavar="N", help="run in N seconds")
    submit.add_argument("--name")
    submit.add_argument("--priority", choices=("high", "normal", "low"))
    _add_retry_options(submit)
    submit.add_argument(
        "--idempotency-key",
        metavar="KEY",
        help="the same key and body within 24 h returns the original job",
    )
    _bind(submit, _jobs_submit, _show_job)

    get = actions.add_parser("get", help="show a job (GET /v1/jobs/ID)", parents=[common])
    get.add_argument("id")
    _bind(get, _jobs_get, _show_job)


def _jobs_submit(client: ApiClient, args: argparse.Namespace) -> Answer:
    body: Answer = {"target": _target(args)}
    optional = {
        "name": args.name,
        "run_at": args.run_at,
        "delay_s": args.delay_s,
        "payload": args.payload,
        "priority": args.priority,
        "retry": _retry(args),
        "idempotency_key": args.idempotency_key,
    }
    body.update({key: value for key, value in optional.items() if value is not None})
    return client.request("POST", "/v1/jobs", body=body)


def _jobs_get(client: ApiClient, args: argparse.Namespace) -> Answer:
    return client.request("GET", f"/v1/jobs/{quote_id(args.id)}")


def _show_job(job: Answer) -> None:
    _print_fields(
        [
            ("ID", job.get("id")),
            ("NAME", job.get("name")),
            ("STATE", job.get("state")),
            ("RUN AT", job.get("run_at")),
            ("EXECUTION", job.get("execution_id")),
            ("PRIORITY", job.get("priority")),
            ("TARGET", _describe_target(job.get("target"))),
            ("CREATED", job.get("created_at")),
        ]
    )


# --- executions --------------------------------------------------------------------------------

EXECUTION_COLUMNS: list[Column] = [
    ("ID", lambda e: e.get("id")),
    ("STATE", lambda e: e.get("state")),
    ("ATTEMPT", lambda e: e.get("attempt")),
    ("SCHEDULED FOR", lambda e: e.get("scheduled_for")),
    ("TRIGGER", lambda e: e.get("trigger")),
    ("SOURCE", lambda e: e.get("schedule_id") or e.get("job_id")),
    ("REASON", lambda e: e.get("reason")),
]
ATTEMPT_COLUMNS: list[Column] = [
    ("ATTEMPT", lambda a: a.get("attempt")),
    ("STARTED", lambda a: a.get("started_at")),
    ("FINISHED", lambda a: a.get("finished_at")),
    ("OUTCOME", lambda a: a.get("outcome")),
    ("HTTP", lambda a: a.get("http_status")),
    ("ERROR", lambda a: a.get("error")),
]


def _add_executions(
    groups: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    executions = groups.add_parser(
        "executions", help="runs of schedules and jobs", parents=[common]
    )
    actions = executions.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = actions.add_parser(
        "list", help="list executions, newest first (GET /v1/executions)", parents=[common]
    )
    listing.add_argument("--schedule-id", metavar="ID")
    listing.add_argument("--job-id", metavar="ID")
    listing.add_argument("--status", metavar="STATE")
    listing.add_argument("--since", metavar="INSTANT")
    listing.add_argument("--until", metavar="INSTANT")
    _add_page_options(listing)
    _bind(listing, _executions_list, _show_execution_list)

    get = actions.add_parser(
        "get", help="show an execution and its attempts (GET /v1/executions/ID)", parents=[common]
    )
    get.add_argument("id")
    _bind(get, _executions_get, _show_execution)


def _executions_list(client: ApiClient, args: argparse.Namespace) -> Answer:
    query = {
        "schedule_id": args.schedule_id,
        "job_id": args.job_id,
        "status": args.status,
        "since": args.since,
        "until": args.until,
    }
    return _list(client, "/v1/executions", query, args)


def _executions_get(client: ApiClient, args: argparse.Namespace) -> Answer:
    return client.request("GET", f"/v1/executions/{quote_id(args.id)}")


def _show_execution_list(answer: Answer) -> None:
    _print_list(answer, EXECUTION_COLUMNS, empty="no executions")


def _show_execution(execution: Answer) -> None:
    _print_fields(
        [
            ("ID", execution.get("id")),
            ("STATE", execution.get("state")),
            ("ATTEMPT", execution.get("attempt")),
            ("TRIGGER", execution.get("trigger")),
            ("SCHEDULE", execution.get("schedule_id")),
            ("JOB", execution.get("job_id")),
            ("SCHEDULED FOR", execution.get("scheduled_for")),
            ("CREATED", execution.get("created_at")),
            ("STARTED", execution.get("started_at")),
            ("FINISHED", execution.get("finished_at")),
            ("NEXT ATTEMPT", execution.get("next_attempt_at")),
            ("REASON", execution.get("reason")),
            ("FENCING TOKEN", execution.get("fencing_token")),
        ]
    )
    print()
    attempts = execution.get("attempts") or []
    if attempts:
        print("ATTEMPTS")
        _print_table(ATTEMPT_COLUMNS, attempts)
    else:
        print("no attempts yet")


# --- shared options and request pieces ---------------------------------------------------------


def _add_target_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("target (one of --url or --queue-url)")
    kind = group.add_mutually_exclusive_group(required=True)
    kind.add_argument("--url", help="HTTP target URL")
    kind.add_argument("--queue-url", metavar="Q", help="SQS target queue URL")
    group.add_argument("--method", type=str.upper, help="HTTP method (server default: POST)")
    group.add_argument(
        "--header",
        action="append",
        type=_header,
        metavar="K=V",
        help="HTTP header to send; repeatable",
    )
    group.add_argument("--timeout-s", type=int, metavar="N", help="HTTP timeout, 1-86400 s")
    group.add_argument(
        "--callback",
        action="store_true",
        help="a 2xx answer means accepted; the target calls :complete when done",
    )


def _target(args: argparse.Namespace) -> Answer:
    if args.queue_url is not None:
        http_only = {
            "--method": args.method,
            "--header": args.header,
            "--timeout-s": args.timeout_s,
            "--callback": args.callback or None,
        }
        stray = [flag for flag, value in http_only.items() if value is not None]
        if stray:
            raise UsageError(f"{', '.join(stray)} only apply to an HTTP target (--url)")
        return {"type": "sqs", "queue_url": args.queue_url}
    target: Answer = {"type": "http", "url": args.url}
    if args.method:
        target["method"] = args.method
    if args.header:
        target["headers"] = dict(args.header)
    if args.timeout_s is not None:
        target["timeout_s"] = args.timeout_s
    if args.callback:
        target["callback"] = True
    return target


def _add_retry_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("retry policy (unset parts take the API defaults)")
    group.add_argument("--max-attempts", type=int, metavar="N", help="1-100 (default 3)")
    group.add_argument(
        "--backoff", choices=("exponential", "linear", "fixed"), help="(default exponential)"
    )
    group.add_argument("--initial-s", type=int, metavar="N", help="first delay (default 30)")
    group.add_argument("--max-s", type=int, metavar="N", help="largest delay (default 3600)")


def _retry(args: argparse.Namespace) -> Answer | None:
    # Only the flags given: the API fills the rest from its documented defaults.
    given = {key: getattr(args, key) for key in RETRY_FIELDS if getattr(args, key) is not None}
    return given or None


def _add_page_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, metavar="N", help="page size (API default 50)")
    parser.add_argument("--cursor", metavar="C", help="continue from a previous page")
    parser.add_argument("--all", action="store_true", help="follow next_cursor to the end")


def _list(
    client: ApiClient, path: str, filters: dict[str, Any], args: argparse.Namespace
) -> Answer:
    query = {**filters, "limit": args.limit, "cursor": args.cursor}
    if args.all:
        return {"items": list(client.paginate(path, query)), "next_cursor": None}
    return client.request("GET", path, query=query)


def _describe_target(target: Any) -> str | None:
    if not isinstance(target, dict):
        return None if target is None else str(target)
    if target.get("type") == "http":
        return f"http {target.get('method') or 'POST'} {target.get('url')}"
    if target.get("type") == "sqs":
        return f"sqs {target.get('queue_url')}"
    return json.dumps(target)


# --- argument types ----------------------------------------------------------------------------


def _json_object(text: str) -> Answer:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object, e.g. '{\"k\": 1}'")
    return value


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected K=V, got {text!r}")
    return name.strip(), value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


# --- output ------------------------------------------------------------------------------------


def _cell(value: Any, limit: int | None = MAX_CELL) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = json.dumps(value) if isinstance(value, dict | list) else " ".join(str(value).split())
    if limit is not None and len(text) > limit:
        return text[: limit - 1] + "…"
    return text


def _print_table(columns: Sequence[Column], records: Iterable[Answer]) -> None:
    headers = [title for title, _ in columns]
    rows = [[_cell(pick(record)) for _, pick in columns] for record in records]
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=False)]
    for row in [headers, *rows]:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )


def _print_list(answer: Answer, columns: Sequence[Column], empty: str) -> None:
    items = answer.get("items") or []
    if items:
        _print_table(columns, items)
    else:
        print(empty)
    if answer.get("next_cursor"):
        print(f"\nmore: --cursor {answer['next_cursor']} (or --all)")


def _print_fields(fields: Sequence[tuple[str, Any]]) -> None:
    width = max(len(label) for label, _ in fields) + 1
    for label, value in fields:
        print(f"{label + ':':<{width}}  {_cell(value, limit=None)}")


if __name__ == "__main__":
    sys.exit(main())
