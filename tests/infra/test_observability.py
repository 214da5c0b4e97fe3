"""Observability: a dashboard per configured tenant, alarms to one encrypted SNS topic."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cronwheel import metric_names as names
from tests.infra.template_helpers import ref_or_att, resources

pytestmark = pytest.mark.infra


def _flatten(value: Any) -> str:
    """A dashboard body is an `Fn::Join`; its literal parts are enough to look for names."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_flatten(v) for v in value)
    if isinstance(value, dict):
        return "".join(_flatten(v) for v in value.values())
    return ""


def test_one_dashboard_per_configured_tenant(synthesized: Any, stage: str) -> None:
    # Given the stage's tenants and dashboards
    settings = synthesized.settings(stage)
    dashboards = resources(synthesized.templates[stage], "AWS::CloudWatch::Dashboard").values()
    by_name = {
        d["Properties"]["DashboardName"]: _flatten(d["Properties"]["DashboardBody"])
        for d in dashboards
    }
    # Then there is exactly one per tenant, named after it
    assert set(by_name) == {f"cronwheel-{stage}-{tenant}" for tenant in settings.tenants}
    assert stage != "prod" or settings.tenants, "prod configures at least one tenant"
    for tenant in settings.tenants:
        body = by_name[f"cronwheel-{stage}-{tenant}"]
        # And it shows fires, lag p99, every outcome and the backlog, for that tenant
        for metric in (
            names.FIRED,
            names.FIRE_LAG_MS,
            names.SUCCEEDED,
            names.FAILED,
            names.RETRIED,
            names.DEAD,
            names.SKIPPED,
        ):
            assert f'"{metric}"' in body, metric
        assert f'"{names.NAMESPACE}"' in body
        assert f'"{names.TENANT_DIMENSION}","{tenant}"' in body
        assert '"p99"' in body or "p99" in body
        assert "ApproximateNumberOfMessagesVisible" in body


def _alarm_topics(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    # The stage has other topics too (dead-execution events): the alarm topic is `*-alarms`.
    return {
        topic_id: topic
        for topic_id, topic in resources(template, "AWS::SNS::Topic").items()
        if str(topic["Properties"].get("TopicName", "")).endswith("-alarms")
    }


def _alarms(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        a["Properties"]["AlarmName"]: a["Properties"]
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
    }


def test_the_listed_alarms_exist_and_page_through_sns(synthesized: Any) -> None:
    # Given prod's alarms and its alarm topic
    prod = synthesized.templates["prod"]
    settings = synthesized.settings("prod")
    alarms = _alarms(prod)
    [(topic_id, topic)] = _alarm_topics(prod).items()

    # Then the stage-wide alarms and each tenant's alarms are there
    expected = {
        "cronwheel-prod-dispatch-dlq-depth",
        "cronwheel-prod-history-archive-dlq-depth",
        "cronwheel-prod-tick-errors",
        "cronwheel-prod-shard-lease-takeovers",
    }
    for tenant in settings.tenants:
        expected |= {f"cronwheel-prod-{tenant}-fire-lag-p99", f"cronwheel-prod-{tenant}-dead"}
    assert set(alarms) == expected
    # And every one notifies the topic when it fires and when it clears
    for name, alarm in alarms.items():
        assert [ref_or_att(a) for a in alarm["AlarmActions"]] == [topic_id], name
        assert [ref_or_att(a) for a in alarm["OKActions"]] == [topic_id], name
        assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    # And the topic is encrypted with a rotating key
    key = prod["Resources"][ref_or_att(topic["Properties"]["KmsMasterKeyId"])]
    assert key["Properties"]["EnableKeyRotation"] is True


def _metric_of(alarm: dict[str, Any]) -> tuple[str, str, str, list[dict[str, str]]]:
    """(namespace, metric name, statistic, dimensions), whichever form CloudFormation got."""
    if "Metrics" in alarm:
        [query] = alarm["Metrics"]
        stat = query["MetricStat"]
        metric = stat["Metric"]
        return metric["Namespace"], metric["MetricName"], stat["Stat"], metric["Dimensions"]
    statistic = alarm.get("ExtendedStatistic") or alarm["Statistic"]
    return alarm["Namespace"], alarm["MetricName"], statistic, alarm.get("Dimensions", [])


def test_alarm_thresholds_and_metrics(synthesized: Any) -> None:
    # Given prod's alarms and thresholds
    settings = synthesized.settings("prod")
    thresholds = settings.alarms
    tenant = settings.tenants[0]
    alarms = _alarms(synthesized.templates["prod"])

    # Then fire lag p99 above 1000 ms, for the tenant, from the handlers' metric
    lag = alarms[f"cronwheel-prod-{tenant}-fire-lag-p99"]
    namespace, metric, statistic, dimensions = _metric_of(lag)
    assert (namespace, metric, statistic) == (names.NAMESPACE, names.FIRE_LAG_MS, "p99")
    assert {"Name": names.TENANT_DIMENSION, "Value": tenant} in dimensions
    assert lag["Threshold"] == thresholds.fire_lag_p99_ms == 1000

    # And any dead execution of the tenant
    dead = alarms[f"cronwheel-prod-{tenant}-dead"]
    assert _metric_of(dead)[:3] == (names.NAMESPACE, names.DEAD, "Sum")
    assert dead["Threshold"] == 0

    # And any message in the dead-letter queues, tick errors and shard lease takeovers
    dlq = alarms["cronwheel-prod-dispatch-dlq-depth"]
    assert _metric_of(dlq)[:2] == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
    assert dlq["Threshold"] == 0
    tick = alarms["cronwheel-prod-tick-errors"]
    assert _metric_of(tick)[:2] == ("AWS/Lambda", "Errors")
    takeovers = alarms["cronwheel-prod-shard-lease-takeovers"]
    assert _metric_of(takeovers)[:2] == (names.NAMESPACE, names.LEASE_TAKEOVERS)
    assert takeovers["Threshold"] == thresholds.lease_takeovers


def test_the_alarm_topic_refuses_plain_http(prod: dict[str, Any]) -> None:
    [policy] = [
        policy
        for policy in resources(prod, "AWS::SNS::TopicPolicy").values()
        if {ref_or_att(t) for t in policy["Properties"]["Topics"]} == set(_alarm_topics(prod))
    ]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for s in statements
    )
    assert json.dumps(statements)
