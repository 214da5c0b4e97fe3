from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from ..schemas import HealthOut

router = APIGatewayRouter()


@router.get("/v1/health")
def health() -> HealthOut:
    return HealthOut(status="ok")
