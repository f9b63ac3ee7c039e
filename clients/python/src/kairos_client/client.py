"""A small, typed layer over the generated kairos.v1 stubs.

Values look like the REST API's JSON: states are ``"DUE"``, ``"CLAIMED"``...,
policies ``"fire-once"``, ``"skip"``..., instants are timezone-aware
``datetime`` objects, and a field with no value is ``None`` (never ``""`` or 0).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, Generic, Iterator, List, Mapping, Optional, Sequence, TypeVar

import grpc
from google.protobuf import json_format, struct_pb2, timestamp_pb2

from kairos.v1 import jobs_pb2, jobs_pb2_grpc

from .errors import InvalidArgument, KairosError, from_rpc_error, from_status

T = TypeVar("T")
_UTC = timezone.utc

_STATE_PREFIX = "JOB_STATE_"
_OUTCOME_PREFIX = "RUN_OUTCOME_"
JOB_STATES = ("DUE", "CLAIMED", "COMPLETED", "DEAD", "PAUSED", "CANCELLED")
MISFIRE_POLICIES = ("fire-once", "skip", "catch-up")
OVERLAP_POLICIES = ("skip", "buffer-one", "buffer-all", "cancel-other")
#: The most jobs one create_jobs call takes.
MAX_BATCH_JOBS = 1000


def _instant(ts: timestamp_pb2.Timestamp, present: bool = True) -> Optional[datetime]:
    return ts.ToDatetime(tzinfo=_UTC) if present else None


def _text(value: str) -> Optional[str]:
    return value or None


def _enum_text(enum_type: Any, value: int, prefix: str, dashed: bool = False) -> str:
    name = enum_type.Name(value)[len(prefix):] if value else "UNSPECIFIED"
    return name.lower().replace("_", "-") if dashed else name


def _invalid(message: str, field: Optional[str] = None) -> InvalidArgument:
    """An error for input refused before anything is sent."""
    return InvalidArgument(message, code=grpc.StatusCode.INVALID_ARGUMENT, reason="INVALID_ARGUMENT", field=field)


def _enum_value(enum_type: Any, prefix: str, text: str, field_name: str, allowed: Sequence[str]) -> int:
    if text not in allowed:
        raise _invalid(f"{field_name} must be one of {', '.join(allowed)}; got {text!r}", field_name)
    return enum_type.Value(prefix + text.upper().replace("-", "_"))


@dataclass(frozen=True)
class Job:
    """A job as the coordinator sees it (REST: GET /jobs/{id})."""

    job_id: str
    namespace: str
    name: Optional[str]
    task: str
    #: Cron expression of a recurring job; None for a one-off job.
    schedule: Optional[str]
    #: When a one-off job is due; None for a recurring job.
    run_at: Optional[datetime]
    timezone: str
    payload: Dict[str, Any]
    state: str
    next_run_at: Optional[datetime]
    attempt: int
    max_attempts: int
    timeout_seconds: Optional[int]
    misfire_policy: str
    overlap_policy: str
    idempotency_key: Optional[str]
    #: The fencing token of the latest claim.
    lease_generation: int
    #: The agent holding the lease (CLAIMED); None otherwise.
    lease_owner: Optional[str]
    #: The schedule occurrence the pending or running attempt serves.
    occurrence_at: Optional[datetime]
    version: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_proto(cls, job: jobs_pb2.Job) -> "Job":
        when = job.WhichOneof("when")
        return cls(
            job_id=job.id,
            namespace=job.namespace,
            name=_text(job.name),
            task=job.task,
            schedule=job.schedule if when == "schedule" else None,
            run_at=_instant(job.run_at, when == "run_at"),
            timezone=job.timezone or "UTC",
            payload=json_format.MessageToDict(job.payload) if job.HasField("payload") else {},
            state=_enum_text(jobs_pb2.JobState, job.state, _STATE_PREFIX),
            next_run_at=_instant(job.next_run_at, job.HasField("next_run_at")),
            attempt=job.attempt,
            max_attempts=job.max_attempts,
            timeout_seconds=job.timeout_seconds or None,
            misfire_policy=_enum_text(jobs_pb2.MisfirePolicy, job.misfire_policy, "MISFIRE_POLICY_", dashed=True),
            overlap_policy=_enum_text(jobs_pb2.OverlapPolicy, job.overlap_policy, "OVERLAP_POLICY_", dashed=True),
            idempotency_key=_text(job.idempotency_key),
            lease_generation=job.lease_generation,
            lease_owner=_text(job.lease_owner),
            occurrence_at=_instant(job.occurrence_at, job.HasField("occurrence_at")),
            version=job.version,
            created_at=job.created_at.ToDatetime(tzinfo=_UTC),
            updated_at=job.updated_at.ToDatetime(tzinfo=_UTC),
        )


@dataclass(frozen=True)
class Run:
    """One attempt of a job, or one skipped occurrence (REST: GET /jobs/{id}/runs)."""

    run_id: str
    job_id: str
    attempt: int
    #: The fencing token the run held; None for a SKIPPED occurrence.
    lease_generation: Optional[int]
    scheduled_for: datetime
    started_at: Optional[datetime]
    finished_at: Optional[datetime]
    outcome: str
    worker_id: Optional[str]
    error: Optional[str]
    aborted_by: Optional[str]
    reason: Optional[str]

    @classmethod
    def from_proto(cls, run: jobs_pb2.Run) -> "Run":
        return cls(
            run_id=run.run_id,
            job_id=run.job_id,
            attempt=run.attempt,
            lease_generation=run.lease_generation or None,
            scheduled_for=run.scheduled_for.ToDatetime(tzinfo=_UTC),
            started_at=_instant(run.started_at, run.HasField("started_at")),
            finished_at=_instant(run.finished_at, run.HasField("finished_at")),
            outcome=_enum_text(jobs_pb2.RunOutcome, run.outcome, _OUTCOME_PREFIX),
            worker_id=_text(run.worker_id),
            error=_text(run.error),
            aborted_by=_text(run.aborted_by),
            reason=_text(run.reason),
        )


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing; pass ``next_cursor`` back for the next (None: the last page)."""

    items: List[T]
    next_cursor: Optional[str]


@dataclass(frozen=True)
class Created:
    """The answer to create_job: the job, and whether this call made it (False: an idempotent repeat)."""

    job: Job
    created: bool


@dataclass(frozen=True)
class BatchResult:
    """One item's answer from create_jobs: the job made (``created``) or found by its idempotency key, or ``error``."""

    job_id: Optional[str]
    created: bool
    error: Optional[KairosError]


@dataclass(frozen=True)
class Abort:
    """An abort sent to the agent running the job."""

    run_id: str
    agent_id: str
    lease_generation: int
    requested_by: Optional[str]
    stop_schedule: bool


@dataclass
class Client:
    """A connection to a Kairos coordinator's gRPC port.

    ``address`` defaults to ``KAIROS_COORDINATOR`` (else ``localhost:50051``),
    ``token`` to ``KAIROS_TOKEN``. TLS: ``tls=True`` with the system roots, or
    ``root_certificates`` (PEM bytes) for a private CA; ``client_certificate``
    and ``client_key`` (PEM bytes) for mutual TLS.
    """

    address: Optional[str] = None
    token: Optional[str] = None
    tls: bool = False
    root_certificates: Optional[bytes] = None
    client_certificate: Optional[bytes] = None
    client_key: Optional[bytes] = None
    #: Seconds each call may take.
    timeout: float = 10.0
    _channel: grpc.Channel = field(init=False, repr=False)
    _jobs: jobs_pb2_grpc.JobServiceStub = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.address = self.address or os.environ.get("KAIROS_COORDINATOR") or "localhost:50051"
        if self.token is None:
            self.token = os.environ.get("KAIROS_TOKEN") or None
        if self.tls or self.root_certificates or self.client_certificate:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=self.root_certificates,
                private_key=self.client_key,
                certificate_chain=self.client_certificate,
            )
            self._channel = grpc.secure_channel(self.address, credentials)
        else:
            self._channel = grpc.insecure_channel(self.address)
        self._jobs = jobs_pb2_grpc.JobServiceStub(self._channel)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    def _call(self, method: Any, request: Any) -> Any:
        metadata = (("authorization", f"Bearer {self.token}"),) if self.token else ()
        try:
            return method(request, timeout=self.timeout, metadata=metadata)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None

    # Jobs

    def create_job(
        self,
        task: str,
        *,
        run_at: Optional[datetime] = None,
        schedule: Optional[str] = None,
        timezone: Optional[str] = None,
        payload: Optional[Dict[str, Any]] = None,
        name: Optional[str] = None,
        max_attempts: Optional[int] = None,
        timeout_seconds: Optional[int] = None,
        misfire_policy: Optional[str] = None,
        overlap_policy: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Created:
        """Creates a one-off job (``run_at``) or a recurring one (``schedule``, a cron expression)."""
        request = _create_request(
            task,
            run_at=run_at,
            schedule=schedule,
            timezone=timezone,
            payload=payload,
            name=name,
            max_attempts=max_attempts,
            timeout_seconds=timeout_seconds,
            misfire_policy=misfire_policy,
            overlap_policy=overlap_policy,
            idempotency_key=idempotency_key,
        )
        answer = self._call(self._jobs.CreateJob, request)
        return Created(job=Job.from_proto(answer.job), created=answer.created)

    def create_jobs(self, jobs: Sequence[Mapping[str, Any]]) -> List[BatchResult]:
        """Creates 1 to 1000 jobs in one call and one transaction.

        Each item holds ``create_job``'s arguments (``{"task": "sleep", "run_at": ..., "payload": {...}}``)
        and is answered on its own, in order: a refused item carries the error ``create_job`` would
        have raised for it and does not stop the others. Raises only when the call as a whole fails.
        """
        if not 1 <= len(jobs) <= MAX_BATCH_JOBS:
            raise _invalid(f"create_jobs takes 1 to {MAX_BATCH_JOBS} jobs", "jobs")
        results: List[Optional[BatchResult]] = [None] * len(jobs)
        sent: List[int] = []
        request = jobs_pb2.CreateJobsRequest()
        for index, item in enumerate(jobs):
            try:
                arguments = dict(item)
                request.jobs.append(_create_request(arguments.pop("task", ""), **arguments))
                sent.append(index)
            except KairosError as error:
                results[index] = BatchResult(job_id=None, created=False, error=error)
            except TypeError as error:
                results[index] = BatchResult(job_id=None, created=False, error=_invalid(str(error)))
        if sent:
            answer = self._call(self._jobs.CreateJobs, request)
            if len(answer.results) != len(sent):
                raise KairosError(f"CreateJobs: {len(answer.results)} results for {len(sent)} jobs", code=grpc.StatusCode.INTERNAL)
            for index, result in zip(sent, answer.results):
                if result.HasField("error"):
                    results[index] = BatchResult(job_id=None, created=False, error=from_status(result.error))
                else:
                    results[index] = BatchResult(job_id=result.job_id, created=result.created, error=None)
        return [result for result in results if result is not None]

    def get_job(self, job_id: str) -> Job:
        return Job.from_proto(self._call(self._jobs.GetJob, jobs_pb2.GetJobRequest(job_id=job_id)).job)

    def list_jobs_page(
        self,
        *,
        state: Optional[str] = None,
        task: Optional[str] = None,
        name: Optional[str] = None,
        limit: int = 100,
        cursor: Optional[str] = None,
    ) -> Page[Job]:
        """One page of the caller's jobs (``limit`` 1 to 1000); ``name`` matches names starting with it."""
        request = jobs_pb2.ListJobsRequest(task=task or "", name=name or "", limit=limit, cursor=cursor or "")
        if state is not None:
            request.state = _enum_value(jobs_pb2.JobState, _STATE_PREFIX, state, "state", JOB_STATES)
        answer = self._call(self._jobs.ListJobs, request)
        return Page([Job.from_proto(job) for job in answer.jobs], answer.next_cursor or None)

    def list_jobs(
        self, *, state: Optional[str] = None, task: Optional[str] = None, name: Optional[str] = None, page_size: int = 100
    ) -> Iterator[Job]:
        """Every job matching the filters, fetching a page at a time."""
        cursor: Optional[str] = None
        while True:
            page = self.list_jobs_page(state=state, task=task, name=name, limit=page_size, cursor=cursor)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def cancel_job(self, job_id: str) -> None:
        """Cancels a job that has not started; raises JobClaimed (with who holds it) once an agent has it."""
        self._call(self._jobs.CancelJob, jobs_pb2.CancelJobRequest(job_id=job_id))

    def abort_run(self, job_id: str, *, stop_schedule: bool = False) -> Abort:
        """Stops the running run (it ends CANCELLED); a recurring job goes on unless ``stop_schedule``."""
        answer = self._call(self._jobs.AbortRun, jobs_pb2.AbortRunRequest(job_id=job_id, stop_schedule=stop_schedule))
        return Abort(
            run_id=answer.run_id,
            agent_id=answer.agent_id,
            lease_generation=answer.lease_generation,
            requested_by=_text(answer.requested_by),
            stop_schedule=answer.stop_schedule,
        )

    def pause_job(self, job_id: str) -> Job:
        return Job.from_proto(self._call(self._jobs.PauseJob, jobs_pb2.PauseJobRequest(job_id=job_id)).job)

    def resume_job(self, job_id: str) -> Job:
        return Job.from_proto(self._call(self._jobs.ResumeJob, jobs_pb2.ResumeJobRequest(job_id=job_id)).job)

    def trigger_job(self, job_id: str) -> Job:
        return Job.from_proto(self._call(self._jobs.TriggerJob, jobs_pb2.TriggerJobRequest(job_id=job_id)).job)

    # Runs

    def list_runs_page(self, job_id: str, *, limit: int = 1000, cursor: Optional[str] = None) -> Page[Run]:
        """One page of a job's runs, oldest first."""
        answer = self._call(self._jobs.ListRuns, jobs_pb2.ListRunsRequest(job_id=job_id, limit=limit, cursor=cursor or ""))
        return Page([Run.from_proto(run) for run in answer.runs], answer.next_cursor or None)

    def list_runs(self, job_id: str, *, page_size: int = 1000) -> Iterator[Run]:
        """Every run of a job, oldest first, fetching a page at a time."""
        cursor: Optional[str] = None
        while True:
            page = self.list_runs_page(job_id, limit=page_size, cursor=cursor)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor


def _create_request(
    task: str,
    *,
    run_at: Optional[datetime] = None,
    schedule: Optional[str] = None,
    timezone: Optional[str] = None,
    payload: Optional[Dict[str, Any]] = None,
    name: Optional[str] = None,
    max_attempts: Optional[int] = None,
    timeout_seconds: Optional[int] = None,
    misfire_policy: Optional[str] = None,
    overlap_policy: Optional[str] = None,
    idempotency_key: Optional[str] = None,
) -> jobs_pb2.CreateJobRequest:
    request = jobs_pb2.CreateJobRequest(task=task, name=name or "", idempotency_key=idempotency_key or "")
    if run_at is not None:
        if run_at.tzinfo is None:
            raise _invalid("run_at must be timezone-aware", "run_at")
        request.run_at.FromDatetime(run_at.astimezone(_UTC))
    if schedule is not None:
        request.schedule = schedule
    if timezone:
        request.timezone = timezone
    if payload is not None:
        request.payload.CopyFrom(_struct(payload))
    if max_attempts is not None:
        request.max_attempts = max_attempts
    if timeout_seconds is not None:
        request.timeout_seconds = timeout_seconds
    if misfire_policy is not None:
        request.misfire_policy = _enum_value(jobs_pb2.MisfirePolicy, "MISFIRE_POLICY_", misfire_policy, "misfire_policy", MISFIRE_POLICIES)
    if overlap_policy is not None:
        request.overlap_policy = _enum_value(jobs_pb2.OverlapPolicy, "OVERLAP_POLICY_", overlap_policy, "overlap_policy", OVERLAP_POLICIES)
    return request


def _struct(payload: Dict[str, Any]) -> struct_pb2.Struct:
    if not isinstance(payload, dict):
        raise _invalid("payload must be a dict", "payload")
    struct = struct_pb2.Struct()
    struct.update(payload)
    return struct


__all__ = ["Abort", "Client", "Created", "Job", "KairosError", "Page", "Run"]
