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
from datetime import datetime, timedelta
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
PRIORITIES = ("high", "normal", "low")
DEFAULT_RUN_COUNT = 5
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
    _add_schedules(groups, common)
    _add_cron(groups, common)
    _add_jobs(groups, common)
    _add_executions(groups, common)
    _add_dlq(groups)
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


# --- schedules ---------------------------------------------------------------------------------

SCHEDULE_COLUMNS: list[Column] = [
    ("ID", lambda s: s.get("id")),
    ("NAME", lambda s: s.get("name")),
    ("SCHEDULE", lambda s: _describe_when(s)),
    ("TZ", lambda s: s.get("timezone")),
    ("PAUSED", lambda s: s.get("paused")),
    ("NEXT RUN", lambda s: s.get("next_run_at")),
    ("LAST STATUS", lambda s: s.get("last_status")),
]
RUN_COLUMNS: list[Column] = [
    ("SCHEDULED FOR (UTC)", lambda r: r.get("scheduled_for")),
    ("LOCAL TIME", lambda r: r.get("local_time")),
]


def _add_schedules(
    groups: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    schedules = groups.add_parser("schedules", help="recurring schedules", parents=[common])
    actions = schedules.add_subparsers(dest="action", required=True, metavar="ACTION")

    create = actions.add_parser(
        "create", help="create a schedule (POST /v1/schedules)", parents=[common]
    )
    create.add_argument("name", metavar="NAME", help="unique per tenant, [A-Za-z0-9._-]")
    _add_schedule_options(create, update=False)
    _bind(create, _schedules_create, _show_schedule)

    listing = actions.add_parser(
        "list", help="list schedules (GET /v1/schedules)", parents=[common]
    )
    listing.add_argument("--paused", choices=("true", "false"), help="only paused or active ones")
    listing.add_argument("--name-prefix", metavar="P", help="only names starting with P")
    _add_page_options(listing)
    _bind(listing, _schedules_list, _show_schedule_list)

    get = actions.add_parser("get", help="show a schedule (GET /v1/schedules/ID)", parents=[common])
    get.add_argument("id")
    _bind(get, _schedules_get, _show_schedule)

    update = actions.add_parser(
        "update",
        help="change some fields of a schedule (PATCH /v1/schedules/ID)",
        description="Send only the flags given; the API keeps every other field.",
        parents=[common],
    )
    update.add_argument("id")
    update.add_argument(
        "--if-match",
        type=int,
        metavar="VERSION",
        help="refuse (412) unless the schedule is still at this version",
    )
    _add_schedule_options(update, update=True)
    _bind(update, _schedules_update, _show_schedule)

    delete = actions.add_parser(
        "delete",
        help="delete a schedule and cancel its pending executions (DELETE /v1/schedules/ID)",
        parents=[common],
    )
    delete.add_argument("id")
    _bind(delete, _schedules_delete, _show_deleted)

    for verb, text in (("pause", "stop firing"), ("resume", "start firing again")):
        action = actions.add_parser(
            verb, help=f"{text} (POST /v1/schedules/ID:{verb})", parents=[common]
        )
        action.add_argument("id")
        _bind(action, functools.partial(_schedules_custom, verb), _show_schedule)

    trigger = actions.add_parser(
        "trigger",
        help="run a schedule now, once (POST /v1/schedules/ID:trigger)",
        parents=[common],
    )
    trigger.add_argument("id")
    _bind(trigger, functools.partial(_schedules_custom, "trigger"), _show_execution)

    next_runs = actions.add_parser(
        "next-runs",
        help="the next fire times of a schedule (GET /v1/schedules/ID/next-runs)",
        parents=[common],
    )
    next_runs.add_argument("id")
    next_runs.add_argument(
        "--count", type=int, default=DEFAULT_RUN_COUNT, metavar="N", help="1-100 (%(default)s)"
    )
    _bind(next_runs, _schedules_next_runs, _show_next_runs)


def _add_schedule_options(parser: argparse.ArgumentParser, *, update: bool) -> None:
    # create and update share every field; update makes all of them optional.
    if update:
        parser.add_argument("--name", help="rename the schedule")
    when = parser.add_argument_group("when (one of --cron, --rate, --after)")
    kind = when.add_mutually_exclusive_group(required=not update)
    kind.add_argument("--cron", metavar="EXPR", help="5-field cron, @daily, Jenkins H, ...")
    kind.add_argument("--rate", metavar="EXPR", help='e.g. "5 minutes" (at least 5 seconds)')
    kind.add_argument(
        "--after", metavar="SCHEDULE_ID", help="run each time that schedule's execution succeeds"
    )
    when.add_argument("--tz", metavar="ZONE", help="IANA time zone (API default UTC)")
    when.add_argument("--start-at", metavar="I", help="no fire before this RFC 3339 instant")
    when.add_argument("--end-at", metavar="I", help="no fire after this RFC 3339 instant")
    _add_target_options(parser, required=not update)
    parser.add_argument("--payload", type=_json_object, metavar="JSON", help="JSON object")
    _add_retry_options(parser)
    policy = parser.add_argument_group("policies (unset ones take the API defaults)")
    policy.add_argument(
        "--concurrency", choices=("forbid", "allow", "replace"), help="overlap of runs"
    )
    policy.add_argument(
        "--misfire",
        choices=("skip", "run_once", "catch_up"),
        help="what to do with occurrences missed while firing was down",
    )
    policy.add_argument(
        "--catch-up-limit", type=int, metavar="N", help="most occurrences catch_up runs"
    )
    policy.add_argument(
        "--misfire-grace-s", type=int, metavar="N", help="lateness still treated as on time"
    )
    policy.add_argument(
        "--jitter-s", type=_non_negative_int, metavar="N", help="0-3600, per occurrence"
    )
    policy.add_argument("--priority", choices=PRIORITIES)
    if update:
        parser.add_argument(
            "--paused",
            action=argparse.BooleanOptionalAction,
            help="pause (--paused) or resume (--no-paused)",
        )
    else:
        parser.add_argument("--paused", action="store_true", default=None, help="create it paused")
    parser.add_argument("--description", metavar="TEXT")
    parser.add_argument(
        "--label", action="append", type=_key_value, metavar="K=V", help="label; repeatable"
    )


def _schedule_fields(args: argparse.Namespace) -> Answer:
    fields = {
        "cron": args.cron,
        "rate": args.rate,
        "after": args.after,
        "timezone": args.tz,
        "start_at": args.start_at,
        "end_at": args.end_at,
        "target": _optional_target(args),
        "payload": args.payload,
        "retry": _retry(args),
        "concurrency": args.concurrency,
        "misfire": args.misfire,
        "catch_up_limit": args.catch_up_limit,
        "misfire_grace_s": args.misfire_grace_s,
        "jitter_s": args.jitter_s,
        "priority": args.priority,
        "paused": args.paused,
        "description": args.description,
        "labels": dict(args.label) if args.label else None,
    }
    return {key: value for key, value in fields.items() if value is not None}


def _schedules_create(client: ApiClient, args: argparse.Namespace) -> Answer:
    body: Answer = {"name": args.name, **_schedule_fields(args)}
    return client.request("POST", "/v1/schedules", body=body)


def _schedules_list(client: ApiClient, args: argparse.Namespace) -> Answer:
    query = {"paused": args.paused, "name_prefix": args.name_prefix}
    return _list(client, "/v1/schedules", query, args)


def _schedules_get(client: ApiClient, args: argparse.Namespace) -> Answer:
    return client.request("GET", f"/v1/schedules/{quote_id(args.id)}")


def _schedules_update(client: ApiClient, args: argparse.Namespace) -> Answer:
    body = _schedule_fields(args)
    if args.name is not None:
        body = {"name": args.name, **body}
    if not body:
        raise UsageError("nothing to update: pass at least one field flag (see --help)")
    headers = {"If-Match": str(args.if_match)} if args.if_match is not None else None
    return client.request("PATCH", f"/v1/schedules/{quote_id(args.id)}", body=body, headers=headers)


def _schedules_delete(client: ApiClient, args: argparse.Namespace) -> Answer:
    client.request("DELETE", f"/v1/schedules/{quote_id(args.id)}")
    # 204 has no body; name what went so both the sentence and --json say it.
    return {"id": args.id, "deleted": True}


def _schedules_custom(verb: str, client: ApiClient, args: argparse.Namespace) -> Answer:
    # The custom-method colon stays literal; only the id is escaped.
    return client.request("POST", f"/v1/schedules/{quote_id(args.id)}:{verb}")


def _schedules_next_runs(client: ApiClient, args: argparse.Namespace) -> Answer:
    return client.request(
        "GET", f"/v1/schedules/{quote_id(args.id)}/next-runs", query={"count": args.count}
    )


def _show_schedule_list(answer: Answer) -> None:
    _print_list(answer, SCHEDULE_COLUMNS, empty="no schedules")


def _show_schedule(schedule: Answer) -> None:
    _print_fields(
        [
            ("ID", schedule.get("id")),
            ("NAME", schedule.get("name")),
            ("SCHEDULE", _describe_when(schedule)),
            ("TIMEZONE", schedule.get("timezone")),
            ("START AT", schedule.get("start_at")),
            ("END AT", schedule.get("end_at")),
            ("PAUSED", schedule.get("paused")),
            ("NEXT RUN", schedule.get("next_run_at")),
            ("LAST RUN", schedule.get("last_run_at")),
            ("LAST STATUS", schedule.get("last_status")),
            ("TARGET", _describe_target(schedule.get("target"))),
            ("RETRY", schedule.get("retry")),
            ("CONCURRENCY", schedule.get("concurrency")),
            ("MISFIRE", schedule.get("misfire")),
            ("PRIORITY", schedule.get("priority")),
            ("DESCRIPTION", schedule.get("description")),
            ("LABELS", schedule.get("labels")),
            ("VERSION", schedule.get("version")),
            ("CREATED", schedule.get("created_at")),
            ("UPDATED", schedule.get("updated_at")),
        ]
    )


def _show_deleted(answer: Answer) -> None:
    print(f"deleted {answer.get('id')}")


def _show_next_runs(answer: Answer) -> None:
    _print_list(answer, RUN_COLUMNS, empty="no upcoming runs (paused or finished)")


def _describe_when(schedule: Answer) -> str | None:
    for kind in ("cron", "rate", "after"):
        if schedule.get(kind):
            return f"{kind} {schedule[kind]}"
    return None


# --- cron --------------------------------------------------------------------------------------

PREVIEW_COLUMNS: list[Column] = [
    *RUN_COLUMNS,
    ("NOTE", lambda r: r.get("note")),
]


def _add_cron(
    groups: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    cron = groups.add_parser("cron", help="check schedule expressions", parents=[common])
    actions = cron.add_subparsers(dest="action", required=True, metavar="ACTION")

    preview = actions.add_parser(
        "preview",
        help="the next fire times of an expression, without saving (POST /v1/cron:preview)",
        parents=[common],
    )
    preview.add_argument("expr", metavar="EXPR", help="cron expression (or rate with --rate)")
    preview.add_argument("--rate", action="store_true", help='EXPR is a rate, e.g. "5 minutes"')
    preview.add_argument("--tz", default="UTC", metavar="ZONE", help="IANA zone (%(default)s)")
    preview.add_argument(
        "--count", type=int, default=DEFAULT_RUN_COUNT, metavar="N", help="1-100 (%(default)s)"
    )
    preview.add_argument("--after", metavar="INSTANT", help="start after this (default: now)")
    _bind(preview, _cron_preview, _show_preview)


def _cron_preview(client: ApiClient, args: argparse.Namespace) -> Answer:
    body: Answer = {
        "rate" if args.rate else "cron": args.expr,
        "timezone": args.tz,
        "count": args.count,
    }
    if args.after is not None:
        body["after"] = args.after
    return client.request("POST", "/v1/cron:preview", body=body)


def _show_preview(answer: Answer) -> None:
    items = answer.get("items") or []
    notes = _offset_change_notes([item.get("local_time") for item in items])
    rows = [{**item, "note": note} for item, note in zip(items, notes, strict=True)]
    _print_list({**answer, "items": rows}, PREVIEW_COLUMNS, empty="no fire times")


def _offset_change_notes(local_times: Sequence[Any]) -> list[str | None]:
    """Note each fire time whose UTC offset differs from the one before it (a DST switch)."""
    notes: list[str | None] = []
    previous: timedelta | None = None
    for local_time in local_times:
        offset = _utc_offset(local_time)
        note = None
        if offset is not None and previous is not None and offset != previous:
            note = f"DST: offset {_format_offset(previous)} -> {_format_offset(offset)}"
        notes.append(note)
        previous = offset if offset is not None else previous
    return notes


def _utc_offset(text: Any) -> timedelta | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text).utcoffset()
    except ValueError:
        return None


def _format_offset(offset: timedelta) -> str:
    seconds = int(offset.total_seconds())
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{sign}{hours:02d}:{minutes:02d}" + (f":{seconds:02d}" if seconds else "")


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
    submit.add_argument("--priority", choices=PRIORITIES)
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


# --- dlq (talks to SQS, not to the API) --------------------------------------------------------

DISPATCH_QUEUE_ENV = "CRONWHEEL_QUEUE_DISPATCH_URL"
DEAD_LETTER_COLUMNS: list[Column] = [
    ("EXECUTION", lambda m: m.get("execution_id") or m.get("body")),
    ("TOKEN", lambda m: m.get("token")),
    ("FIRST RECEIVED", lambda m: m.get("first_received_at")),
    ("RECEIVES", lambda m: m.get("receive_count")),
    ("MESSAGE ID", lambda m: m.get("message_id")),
]


def _add_dlq(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # Its own options: the DLQ is read through SQS (the dispatch queue names it), not the API.
    sqs_options = argparse.ArgumentParser(add_help=False)
    group = sqs_options.add_argument_group("SQS options")
    group.add_argument(
        "--queue-url",
        metavar="URL",
        help=f"the dispatch queue (default: ${DISPATCH_QUEUE_ENV}); its DLQ is found from it",
    )
    group.add_argument(
        "--endpoint-url",
        metavar="URL",
        help="AWS endpoint, e.g. the local stack's emulator (default: $AWS_ENDPOINT_URL)",
    )
    group.add_argument("--region", help="AWS region (default: $AWS_REGION or us-east-1)")
    group.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    dlq = groups.add_parser(
        "dlq",
        help="the dispatch dead-letter queue: list and redrive",
        description="Messages the dispatcher failed on max_receive_count times land here.",
    )
    actions = dlq.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser(
        "list", help="count and show the messages, leaving them in place", parents=[sqs_options]
    )
    listing.add_argument("--limit", type=int, default=100, metavar="N", help="show at most N")
    listing.set_defaults(run=_dlq_list)
    redrive = actions.add_parser(
        "redrive",
        help="move the messages back to the dispatch queue (duplicates are no-ops there)",
        parents=[sqs_options],
    )
    redrive.add_argument("--limit", type=int, metavar="N", help="move at most N (default: all)")
    redrive.set_defaults(run=_dlq_redrive)


def _dead_letter_queue(args: argparse.Namespace) -> Any:
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from cronwheel_local.dlq import DeadLetterQueue, NoDeadLetterQueue

    queue_url = args.queue_url or os.environ.get(DISPATCH_QUEUE_ENV)
    if not queue_url:
        raise UsageError(
            f"no dispatch queue: set {DISPATCH_QUEUE_ENV} or pass --queue-url "
            "(`cronwheel local` prints it; on AWS it is the stack's dispatch queue)"
        )
    endpoint_url = args.endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or None
    region = args.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    session = boto3.Session(region_name=region or "us-east-1")
    credentials: dict[str, str] = {}
    if endpoint_url and session.get_credentials() is None:
        # The local emulator accepts any credentials; a developer's shell may have none.
        credentials = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
    sqs = session.client("sqs", endpoint_url=endpoint_url, **credentials)  # type: ignore[call-overload]
    try:
        return DeadLetterQueue(sqs, queue_url, wait_s=0 if endpoint_url else 1)
    except NoDeadLetterQueue as error:
        raise UsageError(str(error)) from None
    except (BotoCoreError, ClientError) as error:
        raise UsageError(f"cannot read {queue_url}: {error}") from None


def _dlq_list(args: argparse.Namespace) -> int:
    dlq = _dead_letter_queue(args)
    count = dlq.count()
    letters = [letter.as_document() for letter in dlq.peek(args.limit)]
    if getattr(args, "json", False):
        print(json.dumps({"queue_url": dlq.url, "count": count, "messages": letters}, indent=2))
        return EXIT_OK
    print(f"{count} message(s) in {dlq.url}")
    if letters:
        print()
        _print_table(DEAD_LETTER_COLUMNS, letters)
    return EXIT_OK


def _dlq_redrive(args: argparse.Namespace) -> int:
    dlq = _dead_letter_queue(args)
    result = dlq.redrive(args.limit)
    if getattr(args, "json", False):
        print(json.dumps({"moved": result.moved, "failed": result.failed}, indent=2))
    else:
        print(f"moved {result.moved} message(s) from {dlq.url} back to {dlq.source_url}")
        if result.failed:
            print(f"{result.failed} could not be sent; they stay in the DLQ")
    return EXIT_API_ERROR if result.failed else EXIT_OK


# --- shared options and request pieces ---------------------------------------------------------


def _add_target_options(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    group = parser.add_argument_group("target (one of --url or --queue-url)")
    kind = group.add_mutually_exclusive_group(required=required)
    kind.add_argument("--url", help="HTTP target URL")
    kind.add_argument("--queue-url", metavar="Q", help="SQS target queue URL")
    group.add_argument("--method", type=str.upper, help="HTTP method (server default: POST)")
    group.add_argument(
        "--header",
        action="append",
        type=_key_value,
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
        stray = _http_only_flags(args)
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


def _optional_target(args: argparse.Namespace) -> Answer | None:
    # A target is replaced whole, so HTTP details alone (no --url) cannot be sent.
    if args.url is None and args.queue_url is None:
        stray = _http_only_flags(args)
        if stray:
            raise UsageError(f"{', '.join(stray)} need --url: the target is replaced as a whole")
        return None
    return _target(args)


def _http_only_flags(args: argparse.Namespace) -> list[str]:
    given = {
        "--method": args.method,
        "--header": args.header,
        "--timeout-s": args.timeout_s,
        "--callback": args.callback or None,
    }
    return [flag for flag, value in given.items() if value is not None]


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


def _key_value(text: str) -> tuple[str, str]:
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
