"""A stage without private egress refuses such targets when saved and again when called."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cronwheel.domain.model import HttpTarget, Priority, RetryPolicy
from cronwheel.errors import InvalidArgument
from cronwheel.runtime import Runtime
from cronwheel.services.jobs import JobRequest, JobService
from cronwheel.services.schedules import ScheduleService
from tests.integration.conftest import ACME


@pytest.mark.parametrize(
    "url", ["http://169.254.169.254/", "http://10.0.0.1/x", "http://127.0.0.1:8080/"]
)
def test_jobs_and_schedules_refuse_private_targets_on_a_closed_stage(rt: Runtime, url: str) -> None:
    closed = replace(rt.settings, allow_private_egress=False)
    request = JobRequest(
        target=HttpTarget(url=url), payload={}, retry=RetryPolicy(), priority=Priority.NORMAL
    )
    with pytest.raises(InvalidArgument, match="does not allow private egress"):
        JobService(rt.store, rt.queue, closed).submit(ACME, request, rt.clock.now())
    with pytest.raises(InvalidArgument, match="does not allow private egress"):
        ScheduleService(rt.store, rt.queue, closed).create(
            ACME, {"name": "n", "rate": "1 hour", "target": HttpTarget(url=url)}, rt.clock.now()
        )
