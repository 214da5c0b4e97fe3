"""Reading execution history, always within the caller's tenant."""

from __future__ import annotations

from datetime import datetime

from cronwheel.domain.model import Execution, ExecutionState, Principal, Role
from cronwheel.errors import Conflict, FailedPrecondition, NotFound
from cronwheel.services.auth import require_role
from cronwheel.services.recording import end_without_attempt
from cronwheel.settings import Settings
from cronwheel.store.store import ExecutionQuery, Page, Store


def get_execution(store: Store, principal: Principal, execution_id: str) -> Execution:
    execution = store.get_execution(execution_id)
    # Another tenant's record is reported exactly like a missing one, so ids do not leak.
    if execution is None or execution.tenant != principal.tenant:
        raise NotFound(f"execution {execution_id} not found")
    return execution


def list_executions(store: Store, query: ExecutionQuery) -> Page:
    return store.list_executions(query)


def cancel_execution(
    store: Store, settings: Settings, principal: Principal, execution_id: str, now: datetime
) -> Execution:
    """Stop an execution that has not ended. A running HTTP call is not interrupted, but its
    result is ignored: the attempt no longer holds the execution's fencing token."""
    require_role(principal, Role.OPERATOR)
    execution = get_execution(store, principal, execution_id)
    if execution.state.is_terminal:
        raise FailedPrecondition(f"execution {execution_id} already ended {execution.state.value}")
    reason = f"cancelled by {principal.key_id}"
    if not end_without_attempt(store, settings, execution, ExecutionState.CANCELLED, reason, now):
        raise Conflict("the execution changed meanwhile; read it again and retry")
    store.audit(principal, "cancel", execution_id, now)
    return get_execution(store, principal, execution_id)
