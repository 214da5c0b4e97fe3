"""Domain errors. The API maps each `code` to an HTTP status in one place."""

from __future__ import annotations


class CronwheelError(Exception):
    code = "internal"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidArgument(CronwheelError):
    code = "invalid_argument"


class Unauthenticated(CronwheelError):
    code = "unauthenticated"


class PermissionDenied(CronwheelError):
    code = "permission_denied"


class NotFound(CronwheelError):
    code = "not_found"


class AlreadyExists(CronwheelError):
    code = "already_exists"


class Conflict(CronwheelError):
    code = "conflict"


class FailedPrecondition(CronwheelError):
    code = "failed_precondition"


class PayloadTooLarge(CronwheelError):
    code = "payload_too_large"


class ResourceExhausted(CronwheelError):
    code = "resource_exhausted"
