"""Reading execution history, always within the caller's tenant."""

from __future__ import annotations

from cronwheel.domain.model import Execution, Principal
from cronwheel.errors import NotFound
from cronwheel.store.store import ExecutionQuery, Page, Store


def get_execution(store: Store, principal: Principal, execution_id: str) -> Execution:
    execution = store.get_execution(execution_id)
    # Another tenant's record is reported exactly like a missing one, so ids do not leak.
    if execution is None or execution.tenant != principal.tenant:
        raise NotFound(f"execution {execution_id} not found")
    return execution


def list_executions(store: Store, query: ExecutionQuery) -> Page:
    return store.list_executions(query)
