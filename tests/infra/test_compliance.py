"""Compliance: cfn-lint finds nothing, cdk-nag finds nothing unacknowledged, reasons are written."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from aws_cdk import App, Stack, Validations
from aws_cdk import aws_sqs as sqs
from cfnlint.api import lint_file
from constructs import IConstruct

from infra import build_app
from infra.nag import acknowledge
from tests.infra.template_helpers import cdk_context

pytestmark = pytest.mark.infra


def test_cfn_lint_finds_nothing(synthesized: Any, stage: str) -> None:
    # Given the synthesized template / When cfn-lint checks it (errors, warnings, info)
    matches = lint_file(synthesized.template_path(stage))
    # Then there is nothing to report
    assert [str(match) for match in matches] == []


def test_cdk_nag_passes_with_the_plugin_attached(synthesized: Any) -> None:
    # Given the session's synthesis, made with AwsSolutionsChecks attached as in app.py
    # Then it succeeded (a finding would have raised ValidationFailed) and wrote both stages
    assert {stack.stack_name for stack in synthesized.stacks.values()} == {
        "cronwheel-dev",
        "cronwheel-prod",
    }
    for stage in synthesized.stacks:
        assert synthesized.template_path(stage).is_file()


def test_cdk_nag_fails_synthesis_on_an_unacknowledged_finding(tmp_path: Any) -> None:
    # Given the app as app.py builds it (dev only), plus a queue nobody acknowledged
    app = App(context=cdk_context(stage="dev"), outdir=str(tmp_path))
    stacks = build_app(app)
    sqs.Queue(stacks["dev"], "Unacknowledged", encryption=sqs.QueueEncryption.UNENCRYPTED)
    # When it synthesizes / Then the AwsSolutions plugin fails the synthesis
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    violations = {
        violation["ruleName"]
        for plugin in report["pluginReports"]
        for violation in plugin["violations"]
        if any(
            c["constructPath"].endswith("/Unacknowledged/Resource")
            for c in violation["violatingConstructs"]
        )
    }
    assert {"AwsSolutions-SQS2", "AwsSolutions-SQS3", "AwsSolutions-SQS4"} <= violations
    # And nothing else in the stack was reported
    assert all(
        c["constructPath"].startswith("cronwheel-dev/Unacknowledged/")
        for plugin in report["pluginReports"]
        for violation in plugin["violations"]
        if violation["severity"] == "error"
        for c in violation["violatingConstructs"]
    )


def _acknowledgments(scope: IConstruct) -> list[tuple[str, str, str]]:
    key = Validations.ACKNOWLEDGED_RULES_METADATA_KEY
    found = []
    for construct in scope.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == key and entry.data:
                for rule, reason in dict(entry.data).items():
                    found.append((construct.node.path, rule, str(reason)))
    return found


def test_every_acknowledgment_is_on_a_resource_with_a_reason(synthesized: Any) -> None:
    for stack in synthesized.stacks.values():
        acknowledgments = _acknowledgments(stack)
        assert acknowledgments
        for path, rule, reason in acknowledgments:
            # Never blanket: on a construct below the stack, not on the stack itself
            assert path != stack.node.path, rule
            assert len(reason.split()) >= 8, f"{path}: {rule} needs a reason"


def test_an_acknowledgment_without_a_reason_is_refused() -> None:
    with pytest.raises(ValueError, match="real reason"):
        acknowledge(Stack(App(), "S"), "AwsSolutions-SQS3", "n/a")
    assert os.environ.get("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION")
