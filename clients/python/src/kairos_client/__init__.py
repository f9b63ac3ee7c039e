"""Kairos client for Python: a typed layer over the generated ``kairos.v1`` gRPC stubs.

    from kairos_client import Client, JobClaimed

    with Client("localhost:50051", token="kairos_...") as kairos:
        job = kairos.create_job("sleep", schedule="*/5 * * * *", payload={"seconds": 1}).job
"""

from .client import MAX_BATCH_JOBS, Abort, BatchResult, Client, Created, Job, Page, Run
from .errors import (
    AlreadyExists,
    Claim,
    FailedPrecondition,
    InvalidArgument,
    JobClaimed,
    KairosError,
    NotFound,
    PermissionDenied,
    Unauthenticated,
    Unavailable,
    VersionMismatch,
)

__version__ = "0.1.0"

__all__ = [
    "Abort",
    "AlreadyExists",
    "BatchResult",
    "Claim",
    "Client",
    "Created",
    "FailedPrecondition",
    "InvalidArgument",
    "Job",
    "JobClaimed",
    "KairosError",
    "MAX_BATCH_JOBS",
    "NotFound",
    "Page",
    "PermissionDenied",
    "Run",
    "Unauthenticated",
    "Unavailable",
    "VersionMismatch",
]
