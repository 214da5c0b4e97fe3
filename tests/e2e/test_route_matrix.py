"""Every route the API serves x {own tenant, other tenant} x {viewer, operator, admin, no key, bad
key, revoked key} answers what ARCHITECTURE.md's roles and API.md's tenancy rules say.

The caller acts in tenant `umbrella`; the other tenant is `hooli`. Per route, "other tenant" means
what the route lets a caller name: another tenant's record (404, never 403, so ids do not leak),
a body naming another tenant (403), or, for a route that names nothing, an answer that must hold
nothing of the other tenant. The routes come from the served OpenAPI document: a served route
without a row here fails the suite, a row whose route is not served yet is skipped."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import pytest

from cronwheel.domain.model import Role
from cronwheel_local.gateway import AUTHORIZER_CACHE_S
from cronwheel_local.stack import LocalStack
from tests.support.api import Api

OWN, OTHER = "umbrella", "hooli"
ROLE_KEYS = {role: f"{OWN}-{role.value}-key" for role in Role}
OTHER_ADMIN_KEY = f"{OTHER}-admin-key"
NEVER_CALLED = "http://127.0.0.1:9/never"
_names = itertools.count()


class Other(Enum):
    RECORD = "the path names another tenant's record"
    BODY = "the body names another tenant"
    NOTHING = "nothing to name: the answer must hold nothing of another tenant"


def _schedule_body() -> dict[str, Any]:
    return {
        "name": f"matrix-{next(_names)}",
        "cron": "0 0 1 1 *",
        "target": {"type": "http", "url": NEVER_CALLED},
        "retry": {"max_attempts": 1},
    }


def _job_body() -> dict[str, Any]:
    return {"target": {"type": "http", "url": NEVER_CALLED}, "delay_s": 3600}


@dataclass(frozen=True)
class Row:
    method: str
    route: str  # as the OpenAPI document writes it
    role: Role | None  # the least role allowed; None for a public route
    ok: int  # what an allowed caller gets on its own tenant
    body: Callable[[], dict[str, Any]] | None = None
    other: Other = Other.RECORD
    consumes: str | None = None  # the path id an allowed call uses up (deleted, cancelled)

    @property
    def key(self) -> tuple[str, str]:
        return self.method, self.route


ROWS = [
    Row("GET", "/v1/health", None, 200, other=Other.NOTHING),
    Row("POST", "/v1/jobs", Role.OPERATOR, 201, _job_body, Other.BODY),
    Row("GET", "/v1/jobs/{job_id}", Role.VIEWER, 200),
    Row("GET", "/v1/executions", Role.VIEWER, 200, other=Other.NOTHING),
    Row("GET", "/v1/executions/{execution_id}", Role.VIEWER, 200),
    Row(
        "POST",
        "/v1/executions/{execution_id}:cancel",
        Role.OPERATOR,
        200,
        consumes="execution_id",
    ),
    # The execution is scheduled, not running: a heartbeat or completion for it conflicts.
    Row(
        "POST",
        "/v1/executions/{execution_id}:heartbeat",
        Role.OPERATOR,
        409,
        lambda: {"fencing_token": 1},
    ),
    Row(
        "POST",
        "/v1/executions/{execution_id}:complete",
        Role.OPERATOR,
        409,
        lambda: {"fencing_token": 1, "status": "succeeded"},
    ),
    Row("GET", "/v1/schedules", Role.VIEWER, 200, other=Other.NOTHING),
    Row("POST", "/v1/schedules", Role.OPERATOR, 201, _schedule_body, Other.BODY),
    Row("GET", "/v1/schedules/{schedule_id}", Role.VIEWER, 200),
    Row(
        "PATCH",
        "/v1/schedules/{schedule_id}",
        Role.OPERATOR,
        200,
        lambda: {"description": "patched by the route matrix"},
    ),
    Row("DELETE", "/v1/schedules/{schedule_id}", Role.OPERATOR, 204, consumes="schedule_id"),
    Row("POST", "/v1/schedules/{schedule_id}:pause", Role.OPERATOR, 200),
    Row("POST", "/v1/schedules/{schedule_id}:resume", Role.OPERATOR, 200),
    Row("POST", "/v1/schedules/{schedule_id}:trigger", Role.OPERATOR, 202),
    Row("GET", "/v1/schedules/{schedule_id}/next-runs", Role.VIEWER, 200),
    Row("POST", "/v1/cron:preview", Role.VIEWER, 200, lambda: {"cron": "0 2 * * *"}, Other.BODY),
    Row("GET", "/v1/audit", Role.ADMIN, 200, other=Other.NOTHING),
    Row("GET", "/v1/tenant", Role.VIEWER, 200, other=Other.NOTHING),
    Row("PATCH", "/v1/tenant/limits", Role.ADMIN, 200, dict, Other.BODY),
    Row("GET", "/v1/tenant/signing-secret", Role.ADMIN, 200, other=Other.NOTHING),
    Row("POST", "/v1/tenant/signing-secret:rotate", Role.ADMIN, 200, other=Other.NOTHING),
    Row("GET", "/v1/tenant/api-keys", Role.ADMIN, 200, other=Other.NOTHING),
    Row("POST", "/v1/tenant/api-keys", Role.ADMIN, 201, lambda: {"role": "viewer"}, Other.BODY),
    Row("DELETE", "/v1/tenant/api-keys/{key_id}", Role.ADMIN, 204, consumes="key_id"),
]
ROWS_BY_KEY = {row.key: row for row in ROWS}
CALLERS = [*(role.value for role in Role), "no_key", "bad_key", "revoked_key"]


@dataclass
class Tenant:
    """One tenant's records, created once per module through its admin key."""

    admin: Api
    ids: dict[str, str] = field(default_factory=dict)

    def create(self, name: str) -> str:
        if name == "schedule_id":
            status, schedule = self.admin.post("/v1/schedules", _schedule_body())
            assert status == 201, schedule
            return str(schedule["id"])
        if name == "key_id":
            status, key = self.admin.post("/v1/tenant/api-keys", {"role": "viewer"})
            assert status == 201, key
            return str(key["key_id"])
        assert name == "execution_id", name
        # A job far in the future: its execution stays scheduled until cancelled
        status, job = self.admin.post("/v1/jobs", _job_body())
        assert status == 201, job
        self.ids.setdefault("job_id", job["id"])
        return str(job["execution_id"])

    def seed(self) -> Tenant:
        for name in ("schedule_id", "execution_id", "key_id"):
            self.ids[name] = self.create(name)
        return self


@pytest.fixture(scope="module")
def served_routes(stack: LocalStack) -> set[tuple[str, str]]:
    status, document = Api(stack.url, ROLE_KEYS[Role.ADMIN]).get("/v1/openapi.json")
    assert status == 200, document
    return {
        (method.upper(), path) for path, methods in document["paths"].items() for method in methods
    }


@pytest.fixture(scope="module")
def own(stack: LocalStack) -> Tenant:
    return Tenant(Api(stack.url, ROLE_KEYS[Role.ADMIN])).seed()


@pytest.fixture(scope="module")
def other(stack: LocalStack) -> Tenant:
    return Tenant(Api(stack.url, OTHER_ADMIN_KEY)).seed()


@pytest.fixture(scope="module")
def other_marks(other: Tenant) -> set[str]:
    """Strings that would show another tenant's data leaking into an answer."""
    status, secret = other.admin.get("/v1/tenant/signing-secret")
    assert status == 200, secret
    return {OTHER, secret["signing_secret"], *other.ids.values()}


@pytest.fixture(scope="module")
def revoked_key(stack: LocalStack) -> str:
    """An admin key that worked, then was revoked.

    The gateway caches the authorizer's answer per key for AUTHORIZER_CACHE_S (API Gateway's
    results cache: `authorizer_cache_s`, 60 s by default on AWS), so a revoked key keeps working
    until the answer cached before its revocation expires; docs/security.md states this delay.
    The fixture waits it out and then expects the key refused at once."""
    admin = Api(stack.url, ROLE_KEYS[Role.ADMIN])
    status, created = admin.post("/v1/tenant/api-keys", {"role": "admin"})
    assert status == 201, created
    key = admin.as_key(created["key"])
    assert key.get("/v1/tenant")[0] == 200
    assert admin.call("DELETE", f"/v1/tenant/api-keys/{created['key_id']}")[0] == 204
    # The answer cached by the accepted request above has expired by then
    time.sleep(AUTHORIZER_CACHE_S)
    assert key.get("/v1/tenant")[0] == 401
    return str(created["key"])


def _caller_key(caller: str, revoked_key: str) -> str | None:
    keys = {role.value: key for role, key in ROLE_KEYS.items()}
    return {
        **keys,
        "no_key": None,
        "bad_key": "cwk_this-key-was-never-issued",
        "revoked_key": revoked_key,
    }[caller]


def _expected(row: Row, column: str, caller: str) -> int:
    if row.role is None:
        return row.ok
    if caller not in {role.value for role in Role}:
        return 401
    if not Role(caller).allows(row.role):
        return 403
    if column == "own" or row.other is Other.NOTHING:
        return row.ok
    return 404 if row.other is Other.RECORD else 403


def _strings(document: Any) -> Iterator[str]:
    if isinstance(document, str):
        yield document
    elif isinstance(document, dict):
        for key, value in document.items():
            yield key
            yield from _strings(value)
    elif isinstance(document, list):
        for value in document:
            yield from _strings(value)


def test_every_served_route_has_an_expectation_row(served_routes: set[tuple[str, str]]) -> None:
    missing = served_routes - set(ROWS_BY_KEY)
    assert not missing, f"add rows to ROWS for {sorted(missing)}"


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("column", ["own", "other"])
@pytest.mark.parametrize("row", ROWS, ids=[f"{r.method} {r.route}" for r in ROWS])
def test_route_answers_as_roles_and_tenancy_say(
    served_routes: set[tuple[str, str]],
    own: Tenant,
    other: Tenant,
    other_marks: set[str],
    revoked_key: str,
    row: Row,
    column: str,
    caller: str,
) -> None:
    if row.key not in served_routes:
        pytest.skip(f"{row.method} {row.route} is not served yet")
    # Given a caller of umbrella and, per the column, umbrella's or hooli's records
    expected = _expected(row, column, caller)
    records = other if column == "other" and row.other is Other.RECORD else own
    ids = dict(records.ids)
    if row.consumes and expected == row.ok:
        ids[row.consumes] = records.create(row.consumes)
    body = row.body() if row.body else None
    if column == "other" and row.other is Other.BODY:
        body = {**(body or {}), "tenant": OTHER}

    # When it calls the route
    status, answer = own.admin.as_key(_caller_key(caller, revoked_key)).call(
        row.method, row.route.format(**ids), body
    )

    # Then the status is the expected one, errors in the API's format, and nothing of hooli shows
    assert status == expected, answer
    if status >= 400:
        assert answer["error"]["code"] and answer["error"]["message"], answer
    elif column == "other":
        assert not other_marks & set(_strings(answer)), answer


@pytest.mark.parametrize(
    "row",
    [r for r in ROWS if r.body is not None],
    ids=[f"{r.method} {r.route}" for r in ROWS if r.body is not None],
)
def test_a_body_naming_another_tenant_is_refused(
    served_routes: set[tuple[str, str]], own: Tenant, row: Row
) -> None:
    if row.key not in served_routes:
        pytest.skip(f"{row.method} {row.route} is not served yet")
    assert row.body is not None
    # Given an otherwise valid body naming hooli, sent with umbrella's admin key
    body = {**row.body(), "tenant": OTHER}
    status, answer = own.admin.call(row.method, row.route.format(**own.ids), body)
    # Then it is refused as permission_denied on the tenant field
    assert status == 403, answer
    assert answer["error"]["code"] == "permission_denied"
    assert answer["error"]["field"] == "tenant"
    if row.other is not Other.BODY:
        return
    # And where the body may name a tenant at all, naming its own is no offence
    body = {**row.body(), "tenant": OWN}
    status, answer = own.admin.call(row.method, row.route.format(**own.ids), body)
    assert status == row.ok, answer
