"""API: the REST API. `GET /v1/health` is open; every other route goes through the authorizer.

The API is a Lambda proxy: routing, validation and error mapping live in the api handler (one
place, the resolver), so the gateway holds two resources: `/v1/health` and `/v1/{proxy+}`.
"""

from __future__ import annotations

import json

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config import StageSettings
from infra.functions import Functions
from infra.nag import acknowledge

# The gateway's own refusals answer in the API's error shape (API.md, "Errors").
_GATEWAY_ERRORS: tuple[tuple[apigw.ResponseType, str, str, str], ...] = (
    (apigw.ResponseType.UNAUTHORIZED, "401", "unauthenticated", "a valid API key is required"),
    (apigw.ResponseType.ACCESS_DENIED, "403", "permission_denied", "the API key may not do this"),
    (apigw.ResponseType.MISSING_AUTHENTICATION_TOKEN, "404", "not_found", "no such route"),
    (apigw.ResponseType.THROTTLED, "429", "resource_exhausted", "too many requests"),
    (apigw.ResponseType.REQUEST_TOO_LARGE, "413", "payload_too_large", "request too large"),
)

_ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "requestTime": "$context.requestTime",
    "httpMethod": "$context.httpMethod",
    "path": "$context.path",
    "resourcePath": "$context.resourcePath",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
    "integrationLatency": "$context.integrationLatency",
    "tenant": "$context.authorizer.tenant",
    "keyId": "$context.authorizer.key_id",
    "authorizerError": "$context.authorizer.error",
    "xrayTraceId": "$context.xrayTraceId",
}


class Api(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: StageSettings,
        functions: Functions,
    ) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        self.access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=settings.log_retention,
            removal_policy=RemovalPolicy.RETAIN if settings.protect_data else RemovalPolicy.DESTROY,
        )
        self.rest_api = self._build_rest_api()
        self.authorizer = self._build_authorizer(functions)
        self._build_routes(functions)
        self._build_gateway_responses()

    @property
    def url(self) -> str:
        return self.rest_api.url

    def _build_rest_api(self) -> apigw.RestApi:
        settings = self._settings
        api = apigw.RestApi(
            self,
            "RestApi",
            rest_api_name=settings.resource_name("api"),
            description=f"cronwheel REST API v1 ({settings.name})",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            # Access and execution logs need the account-wide API Gateway logging role. It is
            # kept when a stack goes away, because other stacks in the region rely on it.
            cloud_watch_role=True,
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN,
            deploy_options=apigw.StageOptions(
                stage_name=settings.name,
                throttling_rate_limit=settings.api_throttle_rate_rps,
                throttling_burst_limit=settings.api_throttle_burst,
                access_log_destination=apigw.LogGroupLogDestination(self.access_logs),
                access_log_format=apigw.AccessLogFormat.custom(json.dumps(_ACCESS_LOG_FIELDS)),
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
                metrics_enabled=True,
                tracing_enabled=True,
            ),
        )
        acknowledge(
            api,
            "AwsSolutions-COG4",
            "Callers are services holding per-tenant API keys (API.md, Auth); the REQUEST "
            "Lambda authorizer validates them, there is no Cognito user pool by design.",
        )
        acknowledge(
            api,
            "AwsSolutions-APIG2",
            "Lambda proxy API: the api handler validates every request against its pydantic "
            "models and answers in the API's error shape; gateway models would duplicate them.",
        )
        acknowledge(
            api,
            "AwsSolutions-APIG3",
            "No WAF web ACL yet: every route but health needs a valid tenant key, and the stage "
            "throttles; a web ACL can be associated without changing this stack's resources.",
        )
        role = api.node.try_find_child("CloudWatchRole")
        if role is not None:
            acknowledge(
                role,
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AmazonAPIGatewayPushToCloudWatchLogs]",
                "The account-level API Gateway logging role uses the AWS managed policy AWS "
                "documents for it; API Gateway creates its own log groups per API and stage.",
            )
        return api

    def _build_authorizer(self, functions: Functions) -> apigw.RequestAuthorizer:
        return apigw.RequestAuthorizer(
            self,
            "Authorizer",
            authorizer_name=self._settings.resource_name("api-key"),
            handler=functions.authorizer,
            # API Gateway refuses a request without the header (401) before calling the function.
            identity_sources=[apigw.IdentitySource.header("Authorization")],
            results_cache_ttl=Duration.seconds(self._settings.authorizer_cache_s),
        )

    def _build_routes(self, functions: Functions) -> None:
        integration = apigw.LambdaIntegration(functions.api, proxy=True, allow_test_invoke=False)
        v1 = self.rest_api.root.add_resource("v1")
        health = v1.add_resource("health").add_method(
            "GET", integration, authorization_type=apigw.AuthorizationType.NONE
        )
        acknowledge(
            health,
            "AwsSolutions-APIG4",
            "GET /v1/health is the unauthenticated liveness probe of the API contract; it "
            "returns no tenant data.",
        )
        v1.add_resource("{proxy+}").add_method(
            "ANY",
            integration,
            authorizer=self.authorizer,
            authorization_type=apigw.AuthorizationType.CUSTOM,
        )

    def _build_gateway_responses(self) -> None:
        for response_type, status, code, message in _GATEWAY_ERRORS:
            body = json.dumps({"error": {"code": code, "message": message}})
            self.rest_api.add_gateway_response(
                f"{code.title().replace('_', '')}Response",
                type=response_type,
                status_code=status,
                response_headers={"Content-Type": "'application/json'"},
                templates={"application/json": body},
            )
