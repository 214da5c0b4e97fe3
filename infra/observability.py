"""Observability: a dashboard per configured tenant, and alarms that page through one SNS topic.

Metric names, namespace and the `tenant` dimension come from `cronwheel.metric_names`, the
module the handlers emit with (Powertools EMF). Every function runs with
`POWERTOOLS_SERVICE_NAME=cronwheel`, so Powertools adds `service=cronwheel` to each metric:
tenant metrics are {service, tenant}, stage-wide ones (shard lease takeovers) {service}.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cronwheel import metric_names as names
from infra.config import StageSettings
from infra.functions import SERVICE_NAME, Functions
from infra.topics import encrypted_topic

_OUTCOMES = (names.SUCCEEDED, names.FAILED, names.RETRIED, names.DEAD, names.SKIPPED)
_MINUTE = Duration.minutes(1)
_FIVE_MINUTES = Duration.minutes(5)


def tenant_metric(
    metric_name: str, tenant: str, *, statistic: str = "Sum", period: Duration = _MINUTE
) -> cw.Metric:
    return cw.Metric(
        namespace=names.NAMESPACE,
        metric_name=metric_name,
        dimensions_map={"service": SERVICE_NAME, names.TENANT_DIMENSION: tenant},
        statistic=statistic,
        period=period,
        label=metric_name,
    )


def stage_metric(metric_name: str, *, statistic: str = "Sum", period: Duration) -> cw.Metric:
    return cw.Metric(
        namespace=names.NAMESPACE,
        metric_name=metric_name,
        dimensions_map={"service": SERVICE_NAME},
        statistic=statistic,
        period=period,
        label=metric_name,
    )


class Observability(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: StageSettings,
        functions: Functions,
        dispatch_queue: sqs.IQueue,
        dead_letter_queues: Sequence[tuple[str, sqs.IQueue]],
    ) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        self._dispatch_queue = dispatch_queue
        self.topic = self._build_alarm_topic()
        self.stage_alarms: list[cw.Alarm] = [
            *(self._build_dlq_alarm(label, queue) for label, queue in dead_letter_queues),
            self._build_tick_errors_alarm(functions),
            self._build_lease_takeovers_alarm(),
        ]
        self.tenant_alarms: dict[str, list[cw.Alarm]] = {
            tenant: self._build_tenant_alarms(tenant) for tenant in settings.tenants
        }
        self.dashboards: dict[str, cw.Dashboard] = {
            tenant: self._build_tenant_dashboard(tenant) for tenant in settings.tenants
        }

    # --- alarms ----------------------------------------------------------------------------

    def _build_alarm_topic(self) -> sns.Topic:
        topic, key = encrypted_topic(
            self, "AlarmTopic", self._settings, name="alarms", purpose="alarms"
        )
        # CloudWatch publishes alarms to the topic, so it must be able to use the topic's key.
        key.grant(
            iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*"
        )
        for email in self._settings.alarm_emails:
            topic.add_subscription(subscriptions.EmailSubscription(email))
        return topic

    def _alarm(
        self,
        construct_id: str,
        *,
        name: str,
        description: str,
        metric: cw.IMetric,
        threshold: float,
        evaluation_periods: int = 1,
        datapoints_to_alarm: int = 1,
    ) -> cw.Alarm:
        alarm = cw.Alarm(
            self,
            construct_id,
            alarm_name=self._settings.resource_name(name),
            alarm_description=description,
            metric=metric,
            threshold=threshold,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=evaluation_periods,
            datapoints_to_alarm=datapoints_to_alarm,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        )
        action = cw_actions.SnsAction(self.topic)
        alarm.add_alarm_action(action)
        alarm.add_ok_action(action)
        return alarm

    def _build_dlq_alarm(self, label: str, queue: sqs.IQueue) -> cw.Alarm:
        return self._alarm(
            f"{label.title().replace('-', '')}DlqDepth",
            name=f"{label}-dlq-depth",
            description=f"Messages are waiting in the {label} dead-letter queue.",
            metric=queue.metric_approximate_number_of_messages_visible(
                statistic="Maximum", period=_MINUTE
            ),
            threshold=self._settings.alarms.dlq_depth,
        )

    def _build_tick_errors_alarm(self, functions: Functions) -> cw.Alarm:
        return self._alarm(
            "TickErrors",
            name="tick-errors",
            description="The tick function failed; due schedules of some shards may be late.",
            metric=functions.tick.metric_errors(statistic="Sum", period=_FIVE_MINUTES),
            threshold=self._settings.alarms.tick_errors,
        )

    def _build_lease_takeovers_alarm(self) -> cw.Alarm:
        return self._alarm(
            "LeaseTakeovers",
            name="shard-lease-takeovers",
            description="Ticks took over shard leases that another tick still held: ticks are "
            "crashing or running longer than the lease.",
            metric=stage_metric(names.LEASE_TAKEOVERS, period=_FIVE_MINUTES),
            threshold=self._settings.alarms.lease_takeovers,
        )

    def _build_tenant_alarms(self, tenant: str) -> list[cw.Alarm]:
        node_id = _node_id(tenant)
        return [
            self._alarm(
                f"{node_id}FireLagP99",
                name=f"{tenant}-fire-lag-p99",
                description=f"Tenant {tenant}: p99 of due -> target called exceeds the target "
                f"for 3 of the last 5 minutes.",
                metric=tenant_metric(names.FIRE_LAG_MS, tenant, statistic="p99"),
                threshold=self._settings.alarms.fire_lag_p99_ms,
                evaluation_periods=5,
                datapoints_to_alarm=3,
            ),
            self._alarm(
                f"{node_id}Dead",
                name=f"{tenant}-dead",
                description=f"Tenant {tenant}: executions exhausted their retries (state dead).",
                metric=tenant_metric(names.DEAD, tenant, period=_FIVE_MINUTES),
                threshold=self._settings.alarms.dead,
            ),
        ]

    # --- dashboards ------------------------------------------------------------------------

    def _build_tenant_dashboard(self, tenant: str) -> cw.Dashboard:
        dashboard = cw.Dashboard(
            self,
            f"{_node_id(tenant)}Dashboard",
            dashboard_name=self._settings.resource_name(tenant),
            default_interval=Duration.hours(3),
        )
        lag_threshold = cw.HorizontalAnnotation(
            value=self._settings.alarms.fire_lag_p99_ms, label="p99 target"
        )
        queue = self._dispatch_queue
        dashboard.add_widgets(
            cw.GraphWidget(
                title="Fires per minute",
                left=[tenant_metric(names.FIRED, tenant)],
                width=8,
            ),
            cw.GraphWidget(
                title="Fire lag (ms, due -> target called)",
                left=[
                    tenant_metric(names.FIRE_LAG_MS, tenant, statistic="p50"),
                    tenant_metric(names.FIRE_LAG_MS, tenant, statistic="p99"),
                ],
                left_annotations=[lag_threshold],
                width=8,
            ),
            cw.AlarmStatusWidget(
                title="Alarms",
                alarms=[*self.tenant_alarms[tenant], *self.stage_alarms],
                width=8,
            ),
        )
        dashboard.add_widgets(
            cw.GraphWidget(
                title="Outcomes per minute",
                left=[tenant_metric(name, tenant) for name in _OUTCOMES],
                stacked=True,
                width=12,
            ),
            cw.GraphWidget(
                title="Dispatch backlog (all tenants)",
                left=[
                    queue.metric_approximate_number_of_messages_visible(
                        statistic="Maximum", period=_MINUTE, label="ready"
                    ),
                    queue.metric_approximate_number_of_messages_not_visible(
                        statistic="Maximum", period=_MINUTE, label="in flight"
                    ),
                    queue.metric(
                        "ApproximateNumberOfMessagesDelayed",
                        statistic="Maximum",
                        period=_MINUTE,
                        label="delayed (due later)",
                    ),
                ],
                right=[tenant_metric(names.THROTTLED, tenant)],
                width=12,
            ),
        )
        return dashboard


def _node_id(tenant: str) -> str:
    return "Tenant" + "".join(part.capitalize() for part in tenant.replace("_", "-").split("-"))
