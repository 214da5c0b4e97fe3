from __future__ import annotations

import json
from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from cronwheel.domain.instants import parse_instant
from cronwheel.errors import InvalidArgument
from cronwheel.runtime import runtime
from cronwheel.services.schedules import ScheduleService

from ..context import principal
from ..convert import schedule_fields
from ..presenters import execution_out, occurrences_out, schedule_out
from ..schemas import (
    ExecutionOut,
    OccurrencePage,
    PreviewIn,
    ScheduleIn,
    ScheduleOut,
    SchedulePage,
    SchedulePatch,
)

router = APIGatewayRouter()
ScheduleId = Annotated[str, Path(max_length=128)]


def _service() -> ScheduleService:
    rt = runtime()
    return ScheduleService(rt.store, rt.queue, rt.settings)


def _json(status: int, document: str) -> Response[None]:
    return Response(
        status_code=status, content_type=content_types.APPLICATION_JSON, body=json.loads(document)
    )


def _out(schedule_id: str) -> ScheduleOut:
    service = _service()
    schedule = service.get(principal(router), schedule_id)
    return schedule_out(schedule, service.last_run(schedule))


@router.post("/v1/schedules", responses={201: {"description": "created"}})
def create_schedule(body: Annotated[ScheduleIn, Body()]) -> Response[ScheduleOut]:
    created = _service().create(
        principal(router), schedule_fields(body, only_given=False), runtime().clock.now()
    )
    return _json(201, schedule_out(created, None).model_dump_json())


@router.get("/v1/schedules")
def list_schedules(
    paused: Annotated[bool | None, Query()] = None,
    name_prefix: Annotated[str | None, Query(max_length=128)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
) -> SchedulePage:
    service = _service()
    items, next_cursor = service.list_schedules(
        principal(router), name_prefix=name_prefix, paused=paused, limit=limit, cursor=cursor
    )
    return SchedulePage(
        items=[schedule_out(s, service.last_run(s)) for s in items], next_cursor=next_cursor
    )


@router.get("/v1/schedules/<schedule_id>/next-runs")
def next_runs(
    schedule_id: ScheduleId, count: Annotated[int, Query(ge=1, le=100)] = 5
) -> OccurrencePage:
    occurrences = _service().next_runs(principal(router), schedule_id, count, runtime().clock.now())
    return occurrences_out(occurrences)


@router.post("/v1/schedules/<schedule_id>:pause")
def pause(schedule_id: ScheduleId) -> ScheduleOut:
    _service().set_paused(principal(router), schedule_id, True, runtime().clock.now())
    return _out(schedule_id)


@router.post("/v1/schedules/<schedule_id>:resume")
def resume(schedule_id: ScheduleId) -> ScheduleOut:
    _service().set_paused(principal(router), schedule_id, False, runtime().clock.now())
    return _out(schedule_id)


@router.post("/v1/schedules/<schedule_id>:trigger", responses={202: {"description": "accepted"}})
def trigger(schedule_id: ScheduleId) -> Response[ExecutionOut]:
    execution = _service().trigger(principal(router), schedule_id, runtime().clock.now())
    return _json(202, execution_out(execution).model_dump_json())


@router.get("/v1/schedules/<schedule_id>")
def get_schedule(schedule_id: ScheduleId) -> ScheduleOut:
    return _out(schedule_id)


@router.patch("/v1/schedules/<schedule_id>")
def update_schedule(schedule_id: ScheduleId, body: Annotated[SchedulePatch, Body()]) -> ScheduleOut:
    raw = router.current_event.headers.get("If-Match")
    if_match = None
    if raw is not None:
        try:
            if_match = int(raw.strip().strip('"'))
        except ValueError:
            raise InvalidArgument(
                "If-Match must be the schedule's version number", field="If-Match"
            ) from None
    _service().update(
        principal(router),
        schedule_id,
        schedule_fields(body, only_given=True),
        if_match,
        runtime().clock.now(),
    )
    return _out(schedule_id)


@router.delete("/v1/schedules/<schedule_id>", responses={204: {"description": "deleted"}})
def delete_schedule(schedule_id: ScheduleId) -> Response[None]:
    _service().delete(principal(router), schedule_id, runtime().clock.now())
    return Response(status_code=204)


@router.post("/v1/cron:preview")
def preview(body: Annotated[PreviewIn, Body()]) -> OccurrencePage:
    principal(router)
    if (body.cron is None) == (body.rate is None):
        raise InvalidArgument("give exactly one of cron or rate", field="cron")
    now = runtime().clock.now()
    after = parse_instant(body.after, field="after") if body.after else now
    occurrences = ScheduleService.preview(
        cron=body.cron, rate=body.rate, timezone=body.timezone, count=body.count, after=after
    )
    return occurrences_out(occurrences)
