"""Assembling the CDK app: which stages to synthesize, and the checks every synthesis runs."""

from __future__ import annotations

from aws_cdk import App

from infra.config import DEFAULTS_KEY, STAGE_KEY, STAGES_KEY, load_stage, stage_names
from infra.nag import attach_nag
from infra.stack import CronwheelStack


def build_app(app: App, *, nag: bool = True) -> dict[str, CronwheelStack]:
    """Add the stack of `-c stage=NAME`, or of every stage in `cdk.json` when none is given."""
    context = {
        DEFAULTS_KEY: app.node.try_get_context(DEFAULTS_KEY),
        STAGES_KEY: app.node.try_get_context(STAGES_KEY),
    }
    selected = app.node.try_get_context(STAGE_KEY)
    names = (selected,) if selected else stage_names(context)
    stacks = {name: CronwheelStack(app, load_stage(context, name)) for name in names}
    if nag:
        attach_nag(app)
    return stacks
