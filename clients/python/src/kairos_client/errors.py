"""Typed errors of the Kairos client.

Every failed call raises a :class:`KairosError` subclass chosen by the gRPC
status, carrying what the coordinator sent in ``grpc-status-details-bin``
(a ``google.rpc.Status``): the stable ``reason`` (``google.rpc.ErrorInfo``),
the request ``field`` at fault (``google.rpc.BadRequest``, a proto field path
such as ``max_attempts`` or ``payload.seconds``) and, for a claimed job, the
run, agent and fencing token (``kairos.v1.ClaimedJob``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Mapping, Optional

import grpc
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from kairos.v1 import errors_pb2

#: The ErrorInfo domain of every Kairos error.
ERROR_DOMAIN = "kairos.dev"


class KairosError(Exception):
    """A call the coordinator (or the connection to it) refused."""

    def __init__(
        self,
        message: str,
        *,
        code: grpc.StatusCode,
        reason: Optional[str] = None,
        field: Optional[str] = None,
        metadata: Optional[Mapping[str, str]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        #: The gRPC status code.
        self.code = code
        #: Stable UPPER_SNAKE_CASE reason to branch on (``JOB_CLAIMED``, ``JOB_NOT_FOUND``...);
        #: None when the coordinator was never reached.
        self.reason = reason
        #: The request field at fault, as a proto field path; None when no field is.
        self.field = field
        #: The facts the coordinator attached (ErrorInfo metadata), as strings.
        self.metadata: Mapping[str, str] = dict(metadata or {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}(reason={self.reason!r}, field={self.field!r}, message={self.message!r})"


class InvalidArgument(KairosError):
    """Bad input: ``field`` names it; nothing was changed."""


class NotFound(KairosError):
    """No such job (or token) in the caller's namespace."""


class FailedPrecondition(KairosError):
    """The job's state does not allow this (``reason`` says why)."""


@dataclass(frozen=True)
class Claim:
    """Who holds a claimed job."""

    run_id: str
    agent_id: str
    #: The lease generation (fencing token) of the run in progress.
    lease_generation: int
    lease_until: Optional[datetime]


class JobClaimed(FailedPrecondition):
    """Cancel of a job an agent already holds: stop the run with ``abort_run`` instead."""

    def __init__(self, message: str, *, claim: Claim, **kwargs) -> None:
        super().__init__(message, **kwargs)
        self.claim = claim


class AlreadyExists(KairosError):
    """The idempotency key was used before with a different request."""


class VersionMismatch(KairosError):
    """An edit named a version the job no longer has: re-read, re-apply."""


class Unauthenticated(KairosError):
    """No token, or one that is unknown, expired or revoked."""


class PermissionDenied(KairosError):
    """The token's role may not do this."""


class Unavailable(KairosError):
    """The coordinator or its database cannot be reached; nothing was changed, retry later."""


_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.ABORTED: VersionMismatch,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
}


def from_rpc_error(error: grpc.RpcError) -> KairosError:
    """The typed error for a failed call, read from its google.rpc.Status details."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    message = error.details() if hasattr(error, "details") else str(error)
    status = rpc_status.from_call(error) if hasattr(error, "trailing_metadata") else None
    return _typed(code, message, status)


_CODE_BY_NUMBER = {status_code.value[0]: status_code for status_code in grpc.StatusCode}


def from_status(status: status_pb2.Status) -> KairosError:
    """The typed error of a google.rpc.Status carried in a response (a refused create_jobs item)."""
    code = _CODE_BY_NUMBER.get(status.code, grpc.StatusCode.UNKNOWN)
    return _typed(code, status.message, status)


def _typed(code: grpc.StatusCode, message: str, status: Optional[status_pb2.Status]) -> KairosError:
    reason: Optional[str] = None
    field: Optional[str] = None
    metadata: Mapping[str, str] = {}
    claim: Optional[Claim] = None
    if status is not None:
        for detail in status.details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason, metadata = info.reason, dict(info.metadata)
            elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                if bad.field_violations:
                    field = bad.field_violations[0].field
            elif detail.Is(errors_pb2.ClaimedJob.DESCRIPTOR):
                claimed = errors_pb2.ClaimedJob()
                detail.Unpack(claimed)
                claim = Claim(
                    run_id=claimed.run_id,
                    agent_id=claimed.agent_id,
                    lease_generation=claimed.lease_generation,
                    lease_until=claimed.lease_until.ToDatetime() if claimed.HasField("lease_until") else None,
                )
    kwargs = dict(code=code, reason=reason, field=field, metadata=metadata)
    if claim is not None:
        return JobClaimed(message, claim=claim, **kwargs)
    return _BY_CODE.get(code, KairosError)(message, **kwargs)
