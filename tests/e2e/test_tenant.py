"""The caller's tenant: limits and usage, API keys (hashed, shown once, revocable), signing
secret rotation with both secrets verifying; admin only, audited."""

from __future__ import annotations

from cronwheel.domain.signing import verify
from tests.support.api import Api
from tests.support.target import RecordingTarget, wait_for


def test_tenant_shows_limits_and_usage_and_admins_change_limits(api: Api) -> None:
    status, tenant = api.get("/v1/tenant")
    assert status == 200 and tenant["id"] == "acme"
    assert set(tenant["usage"]) == {"running", "executions_today", "schedules"}

    assert api.call("PATCH", "/v1/tenant/limits", {"max_concurrency": 7})[0] == 403
    admin = api.as_key("acme-admin-key")
    status, changed = admin.call("PATCH", "/v1/tenant/limits", {"max_concurrency": 7})
    assert status == 200 and changed["limits"]["max_concurrency"] == 7
    assert admin.call("PATCH", "/v1/tenant/limits", {"max_concurrency": 0})[0] == 400


def test_api_keys_are_shown_once_listed_without_secret_and_revocable(api: Api) -> None:
    admin = api.as_key("acme-admin-key")
    status, created = admin.post("/v1/tenant/api-keys", {"role": "viewer"})
    assert status == 201 and created["key"].startswith("cwk_") and created["role"] == "viewer"
    new_key = api.as_key(created["key"])
    assert new_key.get("/v1/executions")[0] == 200
    assert new_key.post("/v1/jobs", {"target": {"type": "http", "url": "http://x/"}})[0] == 403

    status, listed = admin.get("/v1/tenant/api-keys")
    mine = [k for k in listed["items"] if k["key_id"] == created["key_id"]]
    assert mine and "key" not in mine[0]

    assert admin.call("DELETE", f"/v1/tenant/api-keys/{created['key_id']}")[0] == 204
    # Revocation holds once the gateway's authorizer cache (5 s locally) has expired
    wait_for(lambda: new_key.get("/v1/executions")[0] == 401, timeout_s=10, interval_s=0.5)
    assert (
        api.as_key("globex-admin-key").call("DELETE", f"/v1/tenant/api-keys/{created['key_id']}")[0]
        == 404
    )
    status, audit = admin.get("/v1/audit")
    assert {"create_api_key", "revoke_api_key"} <= {r["action"] for r in audit["items"]}


def test_rotated_signing_secret_signs_new_calls(api: Api, target: RecordingTarget) -> None:
    admin = api.as_key("globex-admin-key")
    old = admin.get("/v1/tenant/signing-secret")[1]["signing_secret"]
    status, rotated = admin.post("/v1/tenant/signing-secret:rotate")
    assert status == 200 and rotated["signing_secret"] != old
    assert admin.get("/v1/tenant/signing-secret")[1]["signing_secret"] == rotated["signing_secret"]
    assert api.get("/v1/tenant/signing-secret")[0] == 403

    status, job = admin.post(
        "/v1/jobs", {"target": {"type": "http", "url": f"{target.base_url}/ok"}}
    )
    assert status == 201
    call = wait_for(lambda: target.calls_for(job["execution_id"]))[0]
    header, stamp = call.headers["X-Cronwheel-Signature"], call.headers["X-Cronwheel-Timestamp"]
    # During rotation a target accepting either secret verifies the call
    assert verify([rotated["signing_secret"], old], stamp, call.body, header)
