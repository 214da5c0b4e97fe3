"""cdk-nag wiring: the AwsSolutions pack as a validation plugin, and acknowledgments.

cdk-nag 3 replaced `NagSuppressions` with CDK's own `Validations.of(construct).acknowledge(...)`;
an acknowledgment applies to the construct it is made on and everything below it, so each one is
made on the resource it concerns, never on the stack, and always with a reason.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import Construct, IConstruct


def attach_nag(app: Construct) -> None:
    """Fail synthesis (`ValidationFailed`) on any AwsSolutions finding not acknowledged."""
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge one cdk-nag rule (or `Rule[Finding]`) on `scope`, with the reason it is safe."""
    if len(reason) < 20:
        raise ValueError(f"the acknowledgment of {rule} needs a real reason, got {reason!r}")
    Validations.of(scope).acknowledge(Acknowledgment(id=rule, reason=reason))
