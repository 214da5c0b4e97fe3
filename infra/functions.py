"""Functions: one factory fixes how every cronwheel Lambda is built, one role per function.

The factory is the only place that sets runtime, architecture, memory, timeout, tracing, log
format, log retention, layers and environment, so the functions cannot drift apart. What each
function may touch is its `FunctionSpec` below: tables (read or read-write, with their indexes
named one by one), the dispatch queue, and nothing else unless the spec says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from aws_cdk import ArnFormat, CfnResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from constructs import Construct

from cronwheel import metric_names
from cronwheel.domain.model import SECRET_NAME_PREFIX
from cronwheel.settings import Settings
from cronwheel.store.tables import (
    ALL_TABLES,
    API_KEYS,
    AUDIT,
    EXECUTIONS,
    IDEMPOTENCY,
    LEASES,
    SCHEDULES,
    TENANTS,
    TableSpec,
)
from infra.config import StageSettings
from infra.data import Data
from infra.layers import ARCHITECTURE, RUNTIME, Layers
from infra.long_jobs import LongJobs
from infra.nag import acknowledge
from infra.paths import ASSET_EXCLUDES, FUNCTIONS_DIR
from infra.queues import Queues

# One Powertools service for every function: the metrics carry the dimensions
# {service: "cronwheel", tenant: <id>}, which the dashboards and alarms query.
SERVICE_NAME = "cronwheel"

# Lambda holds an invocation at most 900 s; the dispatch queue's visibility (960 s) outlasts it.
_MAX_TIMEOUT = Duration.seconds(900)

_TABLE_SPECS = {spec.logical_name: spec for spec in ALL_TABLES}


class Access(Enum):
    READ = "read"
    READ_WRITE = "read_write"


_READ_ACTIONS = [
    "dynamodb:BatchGetItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DescribeTable",
    "dynamodb:GetItem",
    "dynamodb:Query",
    "dynamodb:Scan",
]
# Transactions need no action of their own: TransactWriteItems is authorised per item action.
_WRITE_ACTIONS = [
    "dynamodb:BatchWriteItem",
    "dynamodb:DeleteItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
]


@dataclass(frozen=True)
class FunctionSpec:
    """One function: its handler and what it may touch."""

    key: str
    handler: str
    description: str
    timeout: Duration
    tables: Mapping[str, Access] = field(default_factory=dict)
    sends_to_dispatch: bool = False
    reads_target_secrets: bool = False
    sends_to_target_queues: bool = False
    publishes_dead_events: bool = False
    runs_long_jobs: bool = False  # starts the long-job state machine or reports on its tasks


def _rw(*specs: TableSpec) -> dict[str, Access]:
    return {spec.logical_name: Access.READ_WRITE for spec in specs}


def _ro(*specs: TableSpec) -> dict[str, Access]:
    return {spec.logical_name: Access.READ for spec in specs}


API_FN = FunctionSpec(
    "api",
    "api.handler.handler",
    "cronwheel REST API (API Gateway proxy)",
    # API Gateway gives up on an integration after 29 s.
    Duration.seconds(29),
    tables=_rw(SCHEDULES, EXECUTIONS, TENANTS, API_KEYS, AUDIT, IDEMPOTENCY),
    sends_to_dispatch=True,
    publishes_dead_events=True,
    runs_long_jobs=True,
)
AUTHORIZER_FN = FunctionSpec(
    "authorizer",
    "api.authorizer.handler",
    "cronwheel API key authorizer (REQUEST, Authorization: Bearer)",
    Duration.seconds(10),
    tables=_ro(API_KEYS, TENANTS),
)
TICK_FN = FunctionSpec(
    "tick",
    "tick.handler.handler",
    "cronwheel tick: fans out one invocation per shard, then fires due schedules",
    # A tick must end before the next one starts its shard's lease.
    Duration.seconds(55),
    tables={**_rw(SCHEDULES, EXECUTIONS, LEASES), **_ro(TENANTS)},
    sends_to_dispatch=True,
)
DISPATCH_FN = FunctionSpec(
    "dispatch",
    "dispatch.handler.handler",
    "cronwheel dispatch: claims executions from SQS and calls their targets",
    _MAX_TIMEOUT,
    tables=_rw(EXECUTIONS, SCHEDULES, TENANTS, LEASES),
    sends_to_dispatch=True,
    reads_target_secrets=True,
    sends_to_target_queues=True,
    publishes_dead_events=True,
    runs_long_jobs=True,
)
SWEEPER_FN = FunctionSpec(
    "sweeper",
    "sweeper.handler.handler",
    "cronwheel sweeper: reaps expired leases, re-enqueues lost work, applies timeouts",
    Duration.seconds(55),
    tables={**_rw(EXECUTIONS, SCHEDULES, LEASES), **_ro(TENANTS)},
    sends_to_dispatch=True,
    publishes_dead_events=True,
)
ALL_FUNCTIONS: tuple[FunctionSpec, ...] = (API_FN, AUTHORIZER_FN, TICK_FN, DISPATCH_FN, SWEEPER_FN)


class FunctionFactory:
    """Builds every cronwheel function the same way; only the spec differs."""

    def __init__(
        self,
        scope: Construct,
        *,
        settings: StageSettings,
        layers: Layers,
        environment: Mapping[str, str],
    ) -> None:
        self._scope = scope
        self._settings = settings
        self._code = lambda_.Code.from_asset(str(FUNCTIONS_DIR), exclude=ASSET_EXCLUDES)
        self._layers = layers.all
        self._environment = dict(environment)

    def function_name(self, spec: FunctionSpec) -> str:
        return self._settings.resource_name(spec.key)

    def build(self, spec: FunctionSpec) -> tuple[lambda_.Function, iam.Role]:
        scope = Construct(self._scope, spec.key.capitalize())
        name = self.function_name(spec)
        log_group = logs.LogGroup(
            scope,
            "Logs",
            retention=self._settings.log_retention,
            removal_policy=RemovalPolicy.RETAIN
            if self._settings.protect_data
            else RemovalPolicy.DESTROY,
        )
        role = iam.Role(
            scope,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{name}: least privilege for the {spec.key} function",
        )
        # Instead of AWSLambdaBasicExecutionRole (logs:* on every group): this group only.
        log_group.grant_write(role)
        function = lambda_.Function(
            scope,
            "Function",
            function_name=name,
            description=spec.description,
            code=self._code,
            handler=spec.handler,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            memory_size=self._settings.lambda_memory_mb,
            timeout=spec.timeout,
            tracing=lambda_.Tracing.ACTIVE,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=lambda_.ApplicationLogLevel.INFO,
            system_log_level_v2=lambda_.SystemLogLevel.WARN,
            log_group=log_group,
            layers=self._layers,
            role=role,
            environment={**self._environment, "POWERTOOLS_SERVICE_NAME": SERVICE_NAME},
        )
        _depend_on_policy_only(function, role)
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords "
            "support no resource-level permissions, so AWS requires Resource '*'.",
        )
        acknowledge(
            function,
            "AwsSolutions-L1",
            "Python 3.12 is the runtime the project pins for every function and for the "
            "dependencies layer's wheels; moving to a newer runtime is a deliberate change.",
        )
        return function, role


def _depend_on_policy_only(function: lambda_.Function, role: iam.Role) -> None:
    """CDK makes a function depend on its role's construct: the role *and* its policy. The role
    is already a reference (`Fn::GetAtt`), so the explicit edge to it is redundant (cfn-lint
    W3005); keep only the edge that matters, to the policy the function needs when it starts."""
    policy = role.node.find_child("DefaultPolicy").node.default_child
    cfn_function = function.node.default_child
    assert isinstance(policy, CfnResource) and isinstance(cfn_function, CfnResource)
    cfn_function.add_override("DependsOn", [Stack.of(function).get_logical_id(policy)])


class Functions(Construct):
    """The five functions, their roles, and the dispatch queue's event source."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: StageSettings,
        data: Data,
        queues: Queues,
        layers: Layers,
        long_jobs: LongJobs | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        self._data = data
        self._queues = queues
        self._long_jobs = long_jobs
        self.environment = _build_environment(settings, data, queues, long_jobs)
        self._factory = FunctionFactory(
            self, settings=settings, layers=layers, environment=self.environment
        )
        self.functions: dict[str, lambda_.Function] = {}
        self.roles: dict[str, iam.Role] = {}
        for spec in ALL_FUNCTIONS:
            function, role = self._factory.build(spec)
            self._grant(spec, role)
            self.functions[spec.key], self.roles[spec.key] = function, role
        self._build_tick_fan_out()
        self._build_dispatch_source()

    @property
    def api(self) -> lambda_.Function:
        return self.functions[API_FN.key]

    @property
    def authorizer(self) -> lambda_.Function:
        return self.functions[AUTHORIZER_FN.key]

    @property
    def tick(self) -> lambda_.Function:
        return self.functions[TICK_FN.key]

    @property
    def dispatch(self) -> lambda_.Function:
        return self.functions[DISPATCH_FN.key]

    @property
    def sweeper(self) -> lambda_.Function:
        return self.functions[SWEEPER_FN.key]

    def _grant(self, spec: FunctionSpec, role: iam.Role) -> None:
        for logical_name, access in sorted(spec.tables.items()):
            self._grant_table(role, self._data.tables[logical_name], logical_name, access)
        if spec.sends_to_dispatch:
            self._queues.dispatch.grant_send_messages(role)
        if spec.publishes_dead_events:
            self._queues.grant_publish_dead_executions(role)
        if spec.runs_long_jobs and self._long_jobs is not None:
            self._long_jobs.grant_run(role)
        stack = Stack.of(self)
        if spec.reads_target_secrets:
            # Target headers reference secrets named cronwheel/<tenant id>/...; the API refuses
            # a reference outside the caller's own prefix (docs/security.md).
            secrets = stack.format_arn(
                service="secretsmanager",
                resource="secret",
                resource_name=f"{SECRET_NAME_PREFIX}*",
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            role.add_to_principal_policy(
                iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[secrets])
            )
            acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:"
                f"<AWS::AccountId>:secret:{SECRET_NAME_PREFIX}*]",
                "Targets reference secrets that tenants create after deployment; the role may "
                "only read (GetSecretValue) secrets under the cronwheel/ name prefix, and the "
                "API lets a tenant reference only its own cronwheel/<tenant id>/ names.",
            )
        if spec.sends_to_target_queues:
            target_queues = stack.format_arn(
                service="sqs", resource=f"{self._settings.resource_name('target')}-*"
            )
            role.add_to_principal_policy(
                iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[target_queues])
            )
            acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:sqs:<AWS::Region>:"
                f"<AWS::AccountId>:{self._settings.resource_name('target')}-*]",
                "SQS targets are tenants' queues, created after deployment; the role may send "
                "only to queues named with this stage's target prefix (others grant it by "
                "queue policy).",
            )

    @staticmethod
    def _grant_table(
        role: iam.Role, table: dynamodb.Table, logical_name: str, access: Access
    ) -> None:
        spec = _TABLE_SPECS[logical_name]
        index_arns = [f"{table.table_arn}/index/{index.name}" for index in spec.indexes]
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=_READ_ACTIONS, resources=[table.table_arn, *index_arns])
        )
        if access is Access.READ_WRITE:
            role.add_to_principal_policy(
                iam.PolicyStatement(actions=_WRITE_ACTIONS, resources=[table.table_arn])
            )

    def _build_tick_fan_out(self) -> None:
        # The tick invokes itself once per shard. Its ARN is built from its fixed name rather
        # than taken from the function, which would make the role depend on the function
        # that depends on the role.
        own_arn = Stack.of(self).format_arn(
            service="lambda",
            resource="function",
            resource_name=self._factory.function_name(TICK_FN),
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        self.roles[TICK_FN.key].add_to_principal_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[own_arn])
        )
        # A shard's tick that waited a minute is superseded by the next minute's tick.
        self.tick.configure_async_invoke(max_event_age=Duration.seconds(60), retry_attempts=1)
        self.sweeper.configure_async_invoke(max_event_age=Duration.seconds(60), retry_attempts=1)

    def _build_dispatch_source(self) -> None:
        self.dispatch.add_event_source(
            event_sources.SqsEventSource(
                self._queues.dispatch,
                batch_size=10,
                report_batch_item_failures=True,
                max_concurrency=self._settings.dispatch_max_concurrency,
            )
        )


def _build_environment(
    settings: StageSettings, data: Data, queues: Queues, long_jobs: LongJobs | None
) -> dict[str, str]:
    environment = Settings.environment(
        stage=settings.name,
        table_names=data.table_names(),
        dispatch_queue_url=queues.dispatch.queue_url,
        shards=settings.shards,
        lookahead_s=settings.lookahead_s,
        allow_private_egress=settings.allow_private_egress,
        dead_letter_topic_arn=queues.dead_executions.topic_arn,
        long_job_state_machine_arn=long_jobs.state_machine_arn if long_jobs else None,
    )
    environment.update(
        {
            "CRONWHEEL_SHARD_LEASE_S": str(settings.shard_lease_s),
            "CRONWHEEL_DELIVERY_GRACE_S": str(settings.delivery_grace_s),
            "CRONWHEEL_WORKER_LEASE_SLACK_S": str(settings.worker_lease_slack_s),
            "CRONWHEEL_HISTORY_RETENTION_DAYS": str(settings.history_retention_days),
            "CRONWHEEL_DISPATCH_RATE_PER_S": str(settings.dispatch_rate_per_s),
            "POWERTOOLS_METRICS_NAMESPACE": metric_names.NAMESPACE,
        }
    )
    return environment
