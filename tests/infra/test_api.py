"""API: every route but GET /v1/health goes through the Lambda authorizer."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infra.template_helpers import ref_or_att, resources

pytestmark = pytest.mark.infra


def _path(template: dict[str, Any], resource_id: Any) -> str:
    """`/v1/health` for a method's ResourceId, walking the resources up to the root."""
    parts: list[str] = []
    logical_id = ref_or_att(resource_id)
    while logical_id is not None and logical_id in template["Resources"]:
        resource = template["Resources"][logical_id]
        if resource["Type"] != "AWS::ApiGateway::Resource":
            break
        parts.insert(0, resource["Properties"]["PathPart"])
        logical_id = ref_or_att(resource["Properties"]["ParentId"])
    return "/" + "/".join(parts)


def _methods(template: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (_path(template, m["Properties"]["ResourceId"]), m["Properties"]["HttpMethod"]): m[
            "Properties"
        ]
        for m in resources(template, "AWS::ApiGateway::Method").values()
    }


def test_health_is_open_and_every_other_route_needs_the_authorizer(
    template: dict[str, Any],
) -> None:
    # Given the API's methods and its one authorizer
    methods = _methods(template)
    [(authorizer_id, authorizer)] = resources(template, "AWS::ApiGateway::Authorizer").items()

    # Then GET /v1/health needs no key, and everything else is behind the authorizer
    assert set(methods) == {("/v1/health", "GET"), ("/v1/{proxy+}", "ANY")}
    assert methods[("/v1/health", "GET")]["AuthorizationType"] == "NONE"
    for route, method in methods.items():
        if route != ("/v1/health", "GET"):
            assert method["AuthorizationType"] == "CUSTOM", route
            assert ref_or_att(method["AuthorizerId"]) == authorizer_id, route

    # And the authorizer is the REQUEST authorizer function reading the Authorization header
    assert authorizer["Properties"]["Type"] == "REQUEST"
    assert authorizer["Properties"]["IdentitySource"] == "method.request.header.Authorization"
    uri = str(authorizer["Properties"]["AuthorizerUri"])
    assert _function_id(template, "api.authorizer.handler") in uri


def _function_id(template: dict[str, Any], handler: str) -> str:
    [logical_id] = [
        logical_id
        for logical_id, f in resources(template, "AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == handler
    ]
    return logical_id


def test_every_route_proxies_to_the_api_function(template: dict[str, Any]) -> None:
    api_fn = _function_id(template, "api.handler.handler")
    for route, method in _methods(template).items():
        assert method["Integration"]["Type"] == "AWS_PROXY", route
        assert api_fn in str(method["Integration"]["Uri"]), route


def test_the_stage_throttles_logs_access_and_traces(synthesized: Any, stage: str) -> None:
    # Given the stage's API Gateway stage
    settings = synthesized.settings(stage)
    [api_stage] = resources(synthesized.templates[stage], "AWS::ApiGateway::Stage").values()
    properties = api_stage["Properties"]
    [all_methods] = [
        s
        for s in properties["MethodSettings"]
        if s["HttpMethod"] == "*" and s["ResourcePath"] == "/*"
    ]
    # Then it throttles as the stage says, writes JSON access logs with the tenant, and traces
    assert all_methods["ThrottlingRateLimit"] == settings.api_throttle_rate_rps
    assert all_methods["ThrottlingBurstLimit"] == settings.api_throttle_burst
    assert all_methods["LoggingLevel"] in ("ERROR", "INFO")
    assert "$context.authorizer.tenant" in properties["AccessLogSetting"]["Format"]
    assert properties["TracingEnabled"] is True


def test_gateway_refusals_use_the_api_error_shape(prod: dict[str, Any]) -> None:
    responses = {
        r["Properties"]["ResponseType"]: r["Properties"]
        for r in resources(prod, "AWS::ApiGateway::GatewayResponse").values()
    }
    assert responses["UNAUTHORIZED"]["StatusCode"] == "401"
    assert '"unauthenticated"' in responses["UNAUTHORIZED"]["ResponseTemplates"]["application/json"]
    assert responses["THROTTLED"]["StatusCode"] == "429"
