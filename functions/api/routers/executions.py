from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from cronwheel.domain.instants import format_instant, parse_instant
from cronwheel.domain.model import ExecutionState
from cronwheel.observability import TenantMetrics
from cronwheel.runtime import runtime
from cronwheel.services import callbacks, executions
from cronwheel.step_functions import machine_for
from cronwheel.store.store import ExecutionQuery

from ..context import principal
from ..presenters import execution_out
from ..schemas import CompleteIn, ExecutionOut, ExecutionPage, HeartbeatIn, HeartbeatOut

router = APIGatewayRouter()


@router.get("/v1/executions")
def list_executions(
    schedule_id: Annotated[str | None, Query(max_length=128)] = None,
    job_id: Annotated[str | None, Query(max_length=128)] = None,
    status: Annotated[ExecutionState | None, Query()] = None,
    since: Annotated[str | None, Query(max_length=64)] = None,
    until: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
) -> ExecutionPage:
    query = ExecutionQuery(
        tenant=principal(router).tenant,
        schedule_id=schedule_id,
        job_id=job_id,
        state=status,
        since=parse_instant(since, field="since") if since else None,
        until=parse_instant(until, field="until") if until else None,
        limit=limit,
        cursor=cursor,
    )
    page = executions.list_executions(runtime().store, query)
    return ExecutionPage(
        items=[execution_out(item) for item in page.items], next_cursor=page.next_cursor
    )


@router.post("/v1/executions/<execution_id>:cancel")
def cancel_execution(execution_id: Annotated[str, Path(max_length=128)]) -> ExecutionOut:
    rt = runtime()
    return execution_out(
        executions.cancel_execution(
            rt.store, rt.settings, principal(router), execution_id, rt.clock.now()
        )
    )


@router.post("/v1/executions/<execution_id>:heartbeat")
def heartbeat_execution(
    execution_id: Annotated[str, Path(max_length=128)], body: Annotated[HeartbeatIn, Body()]
) -> HeartbeatOut:
    rt = runtime()
    lease_end = callbacks.heartbeat(
        rt.store,
        rt.settings,
        machine_for(rt.settings),
        principal(router),
        execution_id,
        body.fencing_token,
        rt.clock.now(),
    )
    return HeartbeatOut(lease_expires_at=format_instant(lease_end))


@router.post("/v1/executions/<execution_id>:complete")
def complete_execution(
    execution_id: Annotated[str, Path(max_length=128)], body: Annotated[CompleteIn, Body()]
) -> ExecutionOut:
    rt = runtime()
    completion = callbacks.Completion(body.fencing_token, body.status, body.output, body.error)
    finished = callbacks.complete(
        rt.store,
        rt.queue,
        rt.settings,
        machine_for(rt.settings),
        principal(router),
        execution_id,
        completion,
        rt.clock.now(),
    )
    metrics = TenantMetrics()
    metrics.attempt_ended(finished.tenant, finished.state, finished.attempt, None)
    metrics.flush()
    return execution_out(finished)


@router.get("/v1/executions/<execution_id>")
def get_execution(execution_id: Annotated[str, Path(max_length=128)]) -> ExecutionOut:
    return execution_out(executions.get_execution(runtime().store, principal(router), execution_id))
