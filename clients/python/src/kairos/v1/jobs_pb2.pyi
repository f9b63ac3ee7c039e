import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.rpc import status_pb2 as _status_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_STATE_UNSPECIFIED: _ClassVar[JobState]
    JOB_STATE_DUE: _ClassVar[JobState]
    JOB_STATE_CLAIMED: _ClassVar[JobState]
    JOB_STATE_COMPLETED: _ClassVar[JobState]
    JOB_STATE_DEAD: _ClassVar[JobState]
    JOB_STATE_PAUSED: _ClassVar[JobState]
    JOB_STATE_CANCELLED: _ClassVar[JobState]

class MisfirePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MISFIRE_POLICY_UNSPECIFIED: _ClassVar[MisfirePolicy]
    MISFIRE_POLICY_FIRE_ONCE: _ClassVar[MisfirePolicy]
    MISFIRE_POLICY_SKIP: _ClassVar[MisfirePolicy]
    MISFIRE_POLICY_CATCH_UP: _ClassVar[MisfirePolicy]

class OverlapPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OVERLAP_POLICY_UNSPECIFIED: _ClassVar[OverlapPolicy]
    OVERLAP_POLICY_SKIP: _ClassVar[OverlapPolicy]
    OVERLAP_POLICY_BUFFER_ONE: _ClassVar[OverlapPolicy]
    OVERLAP_POLICY_BUFFER_ALL: _ClassVar[OverlapPolicy]
    OVERLAP_POLICY_CANCEL_OTHER: _ClassVar[OverlapPolicy]

class RunOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUN_OUTCOME_UNSPECIFIED: _ClassVar[RunOutcome]
    RUN_OUTCOME_RUNNING: _ClassVar[RunOutcome]
    RUN_OUTCOME_SUCCEEDED: _ClassVar[RunOutcome]
    RUN_OUTCOME_FAILED: _ClassVar[RunOutcome]
    RUN_OUTCOME_TIMED_OUT: _ClassVar[RunOutcome]
    RUN_OUTCOME_LEASE_EXPIRED: _ClassVar[RunOutcome]
    RUN_OUTCOME_CANCELLED: _ClassVar[RunOutcome]
    RUN_OUTCOME_SKIPPED: _ClassVar[RunOutcome]

class EditApplies(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EDIT_APPLIES_UNSPECIFIED: _ClassVar[EditApplies]
    EDIT_APPLIES_NOW: _ClassVar[EditApplies]
    EDIT_APPLIES_NEXT_CLAIM: _ClassVar[EditApplies]

class DstMark(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DST_MARK_UNSPECIFIED: _ClassVar[DstMark]
    DST_MARK_GAP_SHIFTED: _ClassVar[DstMark]
    DST_MARK_REPEATED_FIRST: _ClassVar[DstMark]
    DST_MARK_REPEATED_ELAPSED: _ClassVar[DstMark]
JOB_STATE_UNSPECIFIED: JobState
JOB_STATE_DUE: JobState
JOB_STATE_CLAIMED: JobState
JOB_STATE_COMPLETED: JobState
JOB_STATE_DEAD: JobState
JOB_STATE_PAUSED: JobState
JOB_STATE_CANCELLED: JobState
MISFIRE_POLICY_UNSPECIFIED: MisfirePolicy
MISFIRE_POLICY_FIRE_ONCE: MisfirePolicy
MISFIRE_POLICY_SKIP: MisfirePolicy
MISFIRE_POLICY_CATCH_UP: MisfirePolicy
OVERLAP_POLICY_UNSPECIFIED: OverlapPolicy
OVERLAP_POLICY_SKIP: OverlapPolicy
OVERLAP_POLICY_BUFFER_ONE: OverlapPolicy
OVERLAP_POLICY_BUFFER_ALL: OverlapPolicy
OVERLAP_POLICY_CANCEL_OTHER: OverlapPolicy
RUN_OUTCOME_UNSPECIFIED: RunOutcome
RUN_OUTCOME_RUNNING: RunOutcome
RUN_OUTCOME_SUCCEEDED: RunOutcome
RUN_OUTCOME_FAILED: RunOutcome
RUN_OUTCOME_TIMED_OUT: RunOutcome
RUN_OUTCOME_LEASE_EXPIRED: RunOutcome
RUN_OUTCOME_CANCELLED: RunOutcome
RUN_OUTCOME_SKIPPED: RunOutcome
EDIT_APPLIES_UNSPECIFIED: EditApplies
EDIT_APPLIES_NOW: EditApplies
EDIT_APPLIES_NEXT_CLAIM: EditApplies
DST_MARK_UNSPECIFIED: DstMark
DST_MARK_GAP_SHIFTED: DstMark
DST_MARK_REPEATED_FIRST: DstMark
DST_MARK_REPEATED_ELAPSED: DstMark

class Job(_message.Message):
    __slots__ = ("id", "namespace", "name", "task", "run_at", "schedule", "timezone", "payload", "state", "next_run_at", "attempt", "max_attempts", "timeout_seconds", "misfire_policy", "idempotency_key", "lease_generation", "created_at", "updated_at", "abort", "retry", "jitter_ms", "pause_on_failure", "paused_reason", "version", "overlap_policy", "catchup_window_ms", "backfill", "lease_owner", "occurrence_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    NEXT_RUN_AT_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MISFIRE_POLICY_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    LEASE_GENERATION_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    ABORT_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    JITTER_MS_FIELD_NUMBER: _ClassVar[int]
    PAUSE_ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    PAUSED_REASON_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_POLICY_FIELD_NUMBER: _ClassVar[int]
    CATCHUP_WINDOW_MS_FIELD_NUMBER: _ClassVar[int]
    BACKFILL_FIELD_NUMBER: _ClassVar[int]
    LEASE_OWNER_FIELD_NUMBER: _ClassVar[int]
    OCCURRENCE_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    namespace: str
    name: str
    task: str
    run_at: _timestamp_pb2.Timestamp
    schedule: str
    timezone: str
    payload: _struct_pb2.Struct
    state: JobState
    next_run_at: _timestamp_pb2.Timestamp
    attempt: int
    max_attempts: int
    timeout_seconds: int
    misfire_policy: MisfirePolicy
    idempotency_key: str
    lease_generation: int
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    abort: AbortInProgress
    retry: RetryPolicy
    jitter_ms: int
    pause_on_failure: bool
    paused_reason: str
    version: int
    overlap_policy: OverlapPolicy
    catchup_window_ms: int
    backfill: BackfillInProgress
    lease_owner: str
    occurrence_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., task: _Optional[str] = ..., run_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., schedule: _Optional[str] = ..., timezone: _Optional[str] = ..., payload: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., state: _Optional[_Union[JobState, str]] = ..., next_run_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., attempt: _Optional[int] = ..., max_attempts: _Optional[int] = ..., timeout_seconds: _Optional[int] = ..., misfire_policy: _Optional[_Union[MisfirePolicy, str]] = ..., idempotency_key: _Optional[str] = ..., lease_generation: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., abort: _Optional[_Union[AbortInProgress, _Mapping]] = ..., retry: _Optional[_Union[RetryPolicy, _Mapping]] = ..., jitter_ms: _Optional[int] = ..., pause_on_failure: _Optional[bool] = ..., paused_reason: _Optional[str] = ..., version: _Optional[int] = ..., overlap_policy: _Optional[_Union[OverlapPolicy, str]] = ..., catchup_window_ms: _Optional[int] = ..., backfill: _Optional[_Union[BackfillInProgress, _Mapping]] = ..., lease_owner: _Optional[str] = ..., occurrence_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class BackfillInProgress(_message.Message):
    __slots__ = ("through", "resume_at")
    THROUGH_FIELD_NUMBER: _ClassVar[int]
    RESUME_AT_FIELD_NUMBER: _ClassVar[int]
    through: _timestamp_pb2.Timestamp
    resume_at: _timestamp_pb2.Timestamp
    def __init__(self, through: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., resume_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RetryPolicy(_message.Message):
    __slots__ = ("initial_interval_ms", "max_interval_ms", "multiplier", "jitter")
    INITIAL_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    JITTER_FIELD_NUMBER: _ClassVar[int]
    initial_interval_ms: int
    max_interval_ms: int
    multiplier: float
    jitter: float
    def __init__(self, initial_interval_ms: _Optional[int] = ..., max_interval_ms: _Optional[int] = ..., multiplier: _Optional[float] = ..., jitter: _Optional[float] = ...) -> None: ...

class AbortInProgress(_message.Message):
    __slots__ = ("requested_at", "requested_by", "stop_schedule")
    REQUESTED_AT_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_BY_FIELD_NUMBER: _ClassVar[int]
    STOP_SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    requested_at: _timestamp_pb2.Timestamp
    requested_by: str
    stop_schedule: bool
    def __init__(self, requested_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., requested_by: _Optional[str] = ..., stop_schedule: _Optional[bool] = ...) -> None: ...

class Run(_message.Message):
    __slots__ = ("run_id", "job_id", "attempt", "lease_generation", "scheduled_for", "started_at", "finished_at", "outcome", "worker_id", "error", "aborted_by", "reason")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    LEASE_GENERATION_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_FOR_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ABORTED_BY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    job_id: str
    attempt: int
    lease_generation: int
    scheduled_for: _timestamp_pb2.Timestamp
    started_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    outcome: RunOutcome
    worker_id: str
    error: str
    aborted_by: str
    reason: str
    def __init__(self, run_id: _Optional[str] = ..., job_id: _Optional[str] = ..., attempt: _Optional[int] = ..., lease_generation: _Optional[int] = ..., scheduled_for: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., outcome: _Optional[_Union[RunOutcome, str]] = ..., worker_id: _Optional[str] = ..., error: _Optional[str] = ..., aborted_by: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class Agent(_message.Message):
    __slots__ = ("agent_id", "tasks", "capacity", "in_flight", "connected_at", "last_heartbeat_at", "draining", "version", "coordinator_id", "namespace", "quarantined_until", "probation")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_AT_FIELD_NUMBER: _ClassVar[int]
    DRAINING_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_UNTIL_FIELD_NUMBER: _ClassVar[int]
    PROBATION_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    tasks: _containers.RepeatedScalarFieldContainer[str]
    capacity: int
    in_flight: int
    connected_at: _timestamp_pb2.Timestamp
    last_heartbeat_at: _timestamp_pb2.Timestamp
    draining: bool
    version: str
    coordinator_id: str
    namespace: str
    quarantined_until: _timestamp_pb2.Timestamp
    probation: bool
    def __init__(self, agent_id: _Optional[str] = ..., tasks: _Optional[_Iterable[str]] = ..., capacity: _Optional[int] = ..., in_flight: _Optional[int] = ..., connected_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_heartbeat_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., draining: _Optional[bool] = ..., version: _Optional[str] = ..., coordinator_id: _Optional[str] = ..., namespace: _Optional[str] = ..., quarantined_until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., probation: _Optional[bool] = ...) -> None: ...

class CreateJobRequest(_message.Message):
    __slots__ = ("run_at", "schedule", "timezone", "task", "payload", "name", "max_attempts", "timeout_seconds", "misfire_policy", "idempotency_key", "retry", "jitter_ms", "pause_on_failure", "overlap_policy", "catchup_window_ms")
    RUN_AT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MISFIRE_POLICY_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    JITTER_MS_FIELD_NUMBER: _ClassVar[int]
    PAUSE_ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_POLICY_FIELD_NUMBER: _ClassVar[int]
    CATCHUP_WINDOW_MS_FIELD_NUMBER: _ClassVar[int]
    run_at: _timestamp_pb2.Timestamp
    schedule: str
    timezone: str
    task: str
    payload: _struct_pb2.Struct
    name: str
    max_attempts: int
    timeout_seconds: int
    misfire_policy: MisfirePolicy
    idempotency_key: str
    retry: RetryPolicy
    jitter_ms: int
    pause_on_failure: bool
    overlap_policy: OverlapPolicy
    catchup_window_ms: int
    def __init__(self, run_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., schedule: _Optional[str] = ..., timezone: _Optional[str] = ..., task: _Optional[str] = ..., payload: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., name: _Optional[str] = ..., max_attempts: _Optional[int] = ..., timeout_seconds: _Optional[int] = ..., misfire_policy: _Optional[_Union[MisfirePolicy, str]] = ..., idempotency_key: _Optional[str] = ..., retry: _Optional[_Union[RetryPolicy, _Mapping]] = ..., jitter_ms: _Optional[int] = ..., pause_on_failure: _Optional[bool] = ..., overlap_policy: _Optional[_Union[OverlapPolicy, str]] = ..., catchup_window_ms: _Optional[int] = ...) -> None: ...

class CreateJobResponse(_message.Message):
    __slots__ = ("job_id", "created", "job")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    created: bool
    job: Job
    def __init__(self, job_id: _Optional[str] = ..., created: _Optional[bool] = ..., job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class CreateJobsRequest(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[CreateJobRequest]
    def __init__(self, jobs: _Optional[_Iterable[_Union[CreateJobRequest, _Mapping]]] = ...) -> None: ...

class CreateJobsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[CreateJobsResult]
    def __init__(self, results: _Optional[_Iterable[_Union[CreateJobsResult, _Mapping]]] = ...) -> None: ...

class CreateJobsResult(_message.Message):
    __slots__ = ("job_id", "created", "error")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    created: bool
    error: _status_pb2.Status
    def __init__(self, job_id: _Optional[str] = ..., created: _Optional[bool] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class GetJobRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class GetJobResponse(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ("state", "task", "limit", "cursor", "name")
    STATE_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    state: JobState
    task: str
    limit: int
    cursor: str
    name: str
    def __init__(self, state: _Optional[_Union[JobState, str]] = ..., task: _Optional[str] = ..., limit: _Optional[int] = ..., cursor: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ("jobs", "next_cursor")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    next_cursor: str
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., next_cursor: _Optional[str] = ...) -> None: ...

class CancelJobRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class CancelJobResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UpdateJobRequest(_message.Message):
    __slots__ = ("job_id", "expected_version", "schedule", "timezone", "run_at", "payload", "name", "max_attempts", "timeout_seconds", "misfire_policy", "retry", "jitter_ms", "pause_on_failure", "overlap_policy", "catchup_window_ms")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MISFIRE_POLICY_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    JITTER_MS_FIELD_NUMBER: _ClassVar[int]
    PAUSE_ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_POLICY_FIELD_NUMBER: _ClassVar[int]
    CATCHUP_WINDOW_MS_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    expected_version: int
    schedule: str
    timezone: str
    run_at: _timestamp_pb2.Timestamp
    payload: _struct_pb2.Struct
    name: str
    max_attempts: int
    timeout_seconds: int
    misfire_policy: MisfirePolicy
    retry: RetryPolicy
    jitter_ms: int
    pause_on_failure: bool
    overlap_policy: OverlapPolicy
    catchup_window_ms: int
    def __init__(self, job_id: _Optional[str] = ..., expected_version: _Optional[int] = ..., schedule: _Optional[str] = ..., timezone: _Optional[str] = ..., run_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., payload: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., name: _Optional[str] = ..., max_attempts: _Optional[int] = ..., timeout_seconds: _Optional[int] = ..., misfire_policy: _Optional[_Union[MisfirePolicy, str]] = ..., retry: _Optional[_Union[RetryPolicy, _Mapping]] = ..., jitter_ms: _Optional[int] = ..., pause_on_failure: _Optional[bool] = ..., overlap_policy: _Optional[_Union[OverlapPolicy, str]] = ..., catchup_window_ms: _Optional[int] = ...) -> None: ...

class UpdateJobResponse(_message.Message):
    __slots__ = ("job", "applies")
    JOB_FIELD_NUMBER: _ClassVar[int]
    APPLIES_FIELD_NUMBER: _ClassVar[int]
    job: Job
    applies: EditApplies
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., applies: _Optional[_Union[EditApplies, str]] = ...) -> None: ...

class StartBackfillRequest(_message.Message):
    __slots__ = ("job_id", "to")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    to: _timestamp_pb2.Timestamp
    def __init__(self, job_id: _Optional[str] = ..., to: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., **kwargs) -> None: ...

class StartBackfillResponse(_message.Message):
    __slots__ = ("first", "last", "count", "resume_at")
    FIRST_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    RESUME_AT_FIELD_NUMBER: _ClassVar[int]
    first: _timestamp_pb2.Timestamp
    last: _timestamp_pb2.Timestamp
    count: int
    resume_at: _timestamp_pb2.Timestamp
    def __init__(self, first: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., count: _Optional[int] = ..., resume_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CancelBackfillRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class CancelBackfillResponse(_message.Message):
    __slots__ = ("finishing",)
    FINISHING_FIELD_NUMBER: _ClassVar[int]
    finishing: bool
    def __init__(self, finishing: _Optional[bool] = ...) -> None: ...

class AbortRunRequest(_message.Message):
    __slots__ = ("job_id", "stop_schedule")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STOP_SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    stop_schedule: bool
    def __init__(self, job_id: _Optional[str] = ..., stop_schedule: _Optional[bool] = ...) -> None: ...

class AbortRunResponse(_message.Message):
    __slots__ = ("run_id", "lease_generation", "agent_id", "requested_by", "stop_schedule")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_GENERATION_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_BY_FIELD_NUMBER: _ClassVar[int]
    STOP_SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    lease_generation: int
    agent_id: str
    requested_by: str
    stop_schedule: bool
    def __init__(self, run_id: _Optional[str] = ..., lease_generation: _Optional[int] = ..., agent_id: _Optional[str] = ..., requested_by: _Optional[str] = ..., stop_schedule: _Optional[bool] = ...) -> None: ...

class PreviewScheduleRequest(_message.Message):
    __slots__ = ("schedule", "timezone", "count")
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    schedule: str
    timezone: str
    count: int
    def __init__(self, schedule: _Optional[str] = ..., timezone: _Optional[str] = ..., count: _Optional[int] = ..., **kwargs) -> None: ...

class PreviewScheduleResponse(_message.Message):
    __slots__ = ("schedule", "timezone", "occurrences")
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    OCCURRENCES_FIELD_NUMBER: _ClassVar[int]
    schedule: str
    timezone: str
    occurrences: _containers.RepeatedCompositeFieldContainer[Occurrence]
    def __init__(self, schedule: _Optional[str] = ..., timezone: _Optional[str] = ..., occurrences: _Optional[_Iterable[_Union[Occurrence, _Mapping]]] = ...) -> None: ...

class ListUpcomingRequest(_message.Message):
    __slots__ = ("job_id", "count")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    count: int
    def __init__(self, job_id: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class ListUpcomingResponse(_message.Message):
    __slots__ = ("job_id", "schedule", "timezone", "occurrences")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    OCCURRENCES_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    schedule: str
    timezone: str
    occurrences: _containers.RepeatedCompositeFieldContainer[Occurrence]
    def __init__(self, job_id: _Optional[str] = ..., schedule: _Optional[str] = ..., timezone: _Optional[str] = ..., occurrences: _Optional[_Iterable[_Union[Occurrence, _Mapping]]] = ...) -> None: ...

class Occurrence(_message.Message):
    __slots__ = ("at", "local", "offset", "dst", "scheduled_local")
    AT_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_LOCAL_FIELD_NUMBER: _ClassVar[int]
    at: _timestamp_pb2.Timestamp
    local: str
    offset: str
    dst: DstMark
    scheduled_local: str
    def __init__(self, at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., local: _Optional[str] = ..., offset: _Optional[str] = ..., dst: _Optional[_Union[DstMark, str]] = ..., scheduled_local: _Optional[str] = ...) -> None: ...

class PauseJobRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class PauseJobResponse(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class ResumeJobRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class ResumeJobResponse(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class TriggerJobRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class TriggerJobResponse(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class ListRunsRequest(_message.Message):
    __slots__ = ("job_id", "limit", "cursor")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    limit: int
    cursor: str
    def __init__(self, job_id: _Optional[str] = ..., limit: _Optional[int] = ..., cursor: _Optional[str] = ...) -> None: ...

class ListRunsResponse(_message.Message):
    __slots__ = ("runs", "next_cursor")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[Run]
    next_cursor: str
    def __init__(self, runs: _Optional[_Iterable[_Union[Run, _Mapping]]] = ..., next_cursor: _Optional[str] = ...) -> None: ...

class ListAgentsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListAgentsResponse(_message.Message):
    __slots__ = ("agents",)
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    agents: _containers.RepeatedCompositeFieldContainer[Agent]
    def __init__(self, agents: _Optional[_Iterable[_Union[Agent, _Mapping]]] = ...) -> None: ...
