"""Ticking: the EventBridge schedules that drive the tick fan-out and the sweeper, once a minute."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.config import StageSettings
from infra.functions import Functions


class Ticking(Construct):
    """`rate(1 minute)` -> tick with no shard (it fans out to one async invocation per shard),
    and `rate(1 minute)` -> sweeper. A missed minute is not replayed: the next one covers it."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: StageSettings,
        functions: Functions,
    ) -> None:
        super().__init__(scope, construct_id)
        self.tick_rule = self._build_every_minute(
            "TickEveryMinute", settings.resource_name("tick-every-minute"), functions.tick
        )
        self.sweep_rule = self._build_every_minute(
            "SweepEveryMinute", settings.resource_name("sweep-every-minute"), functions.sweeper
        )

    def _build_every_minute(
        self, construct_id: str, rule_name: str, function: lambda_.IFunction
    ) -> events.Rule:
        return events.Rule(
            self,
            construct_id,
            rule_name=rule_name,
            description=f"Invoke {rule_name.rsplit('-every-', 1)[0]} once a minute",
            schedule=events.Schedule.rate(Duration.minutes(1)),
            targets=[
                targets.LambdaFunction(
                    function,
                    # The event has no shard: the tick fans out by itself.
                    event=events.RuleTargetInput.from_object({}),
                    retry_attempts=2,
                    max_event_age=Duration.seconds(60),
                )
            ],
        )
