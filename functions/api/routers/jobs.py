from __future__ import annotations

import json
from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from cronwheel.domain.model import RetryPolicy
from cronwheel.runtime import runtime
from cronwheel.services.jobs import JobRequest, JobService

from ..context import principal
from ..convert import domain_target
from ..presenters import job_out
from ..schemas import JobIn, JobOut

router = APIGatewayRouter()


def _service() -> JobService:
    rt = runtime()
    return JobService(rt.store, rt.queue, rt.settings)


@router.post(
    "/v1/jobs",
    responses={
        201: {"description": "created"},
        200: {"description": "same idempotency_key and body: the original job"},
    },
)
def submit_job(body: Annotated[JobIn, Body()]) -> Response[JobOut]:
    rt = runtime()
    request = JobRequest(
        target=domain_target(body.target),
        payload=body.payload,
        retry=RetryPolicy(**body.retry.model_dump()),
        priority=body.priority,
        name=body.name,
        run_at=body.run_at_instant(),
        delay_s=body.delay_s,
        idempotency_key=body.idempotency_key,
        tenant=body.tenant,
        canonical_body=body.model_dump_json(exclude_unset=True),
    )
    submitted = _service().submit(principal(router), request, rt.clock.now())
    return Response(
        status_code=201 if submitted.created else 200,
        content_type=content_types.APPLICATION_JSON,
        body=json.loads(job_out(submitted.job, submitted.execution).model_dump_json()),
    )


@router.get("/v1/jobs/<job_id>")
def get_job(job_id: Annotated[str, Path(max_length=128)]) -> JobOut:
    job, execution = _service().get(principal(router), job_id)
    return job_out(job, execution)
