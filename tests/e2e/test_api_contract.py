"""Bad input gets a clear 4xx in the API's error format; roles and tenants are enforced."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.api import Api

TARGET = {"type": "http", "url": "http://127.0.0.1:9/never"}


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        pytest.param({"run_at": "tomorrow", "target": TARGET}, 400, "run_at", id="bad_instant"),
        pytest.param(
            {"run_at": "2026-09-26T09:00:00", "target": TARGET},
            400,
            "run_at",
            id="instant_without_offset",
        ),
        pytest.param(
            {"target": {"type": "ftp", "url": "x"}}, 400, "target", id="unknown_target_type"
        ),
        pytest.param({"payload": {}}, 400, "target", id="missing_target"),
        pytest.param({"target": TARGET, "delay_s": "soon"}, 400, "delay_s", id="delay_not_an_int"),
        pytest.param(
            {"target": TARGET, "retry": {"max_attempts": 0}},
            400,
            "retry.max_attempts",
            id="retry_out_of_range",
        ),
        pytest.param(
            {"target": TARGET, "payload": [1, 2]}, 400, "payload", id="payload_not_an_object"
        ),
        pytest.param(
            {"target": TARGET, "priority": "urgent"}, 400, "priority", id="unknown_priority"
        ),
        pytest.param({"target": TARGET, "colour": "red"}, 400, "colour", id="unknown_field"),
        pytest.param(
            {"target": {"type": "http", "url": "not a url"}}, 400, "target.url", id="bad_url"
        ),
        pytest.param(
            {"target": TARGET, "run_at": "2026-09-26T09:00:00Z", "delay_s": 5},
            400,
            "delay_s",
            id="run_at_and_delay",
        ),
        pytest.param(
            {"target": TARGET, "payload": {"blob": "x" * 70_000}},
            413,
            "payload",
            id="oversize_payload",
        ),
        pytest.param(
            {"target": TARGET, "tenant": "globex"}, 403, "tenant", id="other_tenant_in_body"
        ),
    ],
)
def test_invalid_job_requests_get_a_4xx_in_the_error_format(
    api: Api, body: dict[str, Any], status: int, field: str
) -> None:
    # When submitting an invalid job
    got, error = api.post("/v1/jobs", body)

    # Then the answer is the expected 4xx naming the field, with a readable message
    assert got == status, error
    assert set(error) == {"error"}
    assert error["error"]["field"] == field
    assert error["error"]["message"]


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"{not json", id="malformed_json"),
        pytest.param(b"[]", id="json_array"),
        pytest.param(b"", id="empty_body"),
        pytest.param(
            json.dumps({"target": TARGET, "payload": {"b": "x" * 300_000}}).encode(),
            id="oversize_body",
        ),
    ],
)
def test_unparseable_bodies_are_4xx_never_5xx(api: Api, raw: bytes) -> None:
    status, error = api.call("POST", "/v1/jobs", raw=raw)
    assert 400 <= status < 500, error
    assert error["error"]["code"] in {"invalid_argument", "payload_too_large"}


def test_viewer_cannot_submit_but_can_read(api: Api) -> None:
    viewer = api.as_key("acme-viewer-key")
    status, error = viewer.post("/v1/jobs", {"target": TARGET, "delay_s": 3600})
    assert status == 403 and error["error"]["code"] == "permission_denied"
    assert viewer.get("/v1/executions")[0] == 200


@pytest.mark.parametrize("key", [None, "not-a-key"], ids=["no_key", "bad_key"])
def test_unauthenticated_requests_get_401(api: Api, key: str | None) -> None:
    status, error = api.as_key(key).get("/v1/executions")
    assert status == 401 and error["error"]["code"] == "unauthenticated"


def test_health_needs_no_key(api: Api) -> None:
    assert api.as_key(None).get("/v1/health") == (200, {"status": "ok"})


def test_another_tenants_records_are_not_found(api: Api) -> None:
    # Given a job of acme
    status, job = api.post("/v1/jobs", {"target": TARGET, "delay_s": 3600})
    assert status == 201
    globex = api.as_key("globex-admin-key")

    # Then globex sees neither the job nor its execution, exactly as if they did not exist
    for path in (f"/v1/jobs/{job['id']}", f"/v1/executions/{job['execution_id']}"):
        status, error = globex.get(path)
        assert status == 404 and error["error"]["code"] == "not_found"
    status, page = globex.get(f"/v1/executions?job_id={job['id']}")
    assert status == 200 and page["items"] == []


def test_executions_list_pages_with_a_cursor_newest_first(api: Api) -> None:
    # Given three jobs of one name prefix far in the future
    ids = []
    for hours in (1, 2, 3):
        status, job = api.post("/v1/jobs", {"target": TARGET, "delay_s": hours * 3600 + 7})
        assert status == 201
        ids.append(job["execution_id"])

    # When listing scheduled executions two at a time
    seen: list[str] = []
    cursor = None
    for _ in range(20):
        path = "/v1/executions?status=scheduled&limit=2" + (f"&cursor={cursor}" if cursor else "")
        status, page = api.get(path)
        assert status == 200
        seen += [item["id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break

    # Then every one is listed once, newest scheduled_for first
    mine = [i for i in seen if i in ids]
    assert mine == list(reversed(ids))
    assert len(seen) == len(set(seen))


def test_list_rejects_bad_filters(api: Api) -> None:
    assert api.get("/v1/executions?status=sleeping")[0] == 400
    assert api.get("/v1/executions?limit=501")[0] == 400
    assert api.get("/v1/executions?since=yesterday")[0] == 400
    assert api.get("/v1/executions?cursor=%%%")[0] == 400


def test_openapi_document_is_served(api: Api) -> None:
    status, document = api.get("/v1/openapi.json")
    assert status == 200
    assert {"/v1/jobs", "/v1/executions", "/v1/health"} <= set(document["paths"])
