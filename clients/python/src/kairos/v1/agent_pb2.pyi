import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class HandlerResult(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HANDLER_RESULT_UNSPECIFIED: _ClassVar[HandlerResult]
    HANDLER_RESULT_SUCCEEDED: _ClassVar[HandlerResult]
    HANDLER_RESULT_FAILED: _ClassVar[HandlerResult]
    HANDLER_RESULT_TIMED_OUT: _ClassVar[HandlerResult]
    HANDLER_RESULT_CANCELLED: _ClassVar[HandlerResult]

class LeaseLostReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LEASE_LOST_REASON_UNSPECIFIED: _ClassVar[LeaseLostReason]
    LEASE_LOST_REASON_STALE_GENERATION: _ClassVar[LeaseLostReason]
    LEASE_LOST_REASON_EXPIRED: _ClassVar[LeaseLostReason]
    LEASE_LOST_REASON_CANCELLED: _ClassVar[LeaseLostReason]
    LEASE_LOST_REASON_NOT_FOUND: _ClassVar[LeaseLostReason]

class OutcomeAckResult(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_ACK_RESULT_UNSPECIFIED: _ClassVar[OutcomeAckResult]
    OUTCOME_ACK_RESULT_RECORDED: _ClassVar[OutcomeAckResult]
    OUTCOME_ACK_RESULT_STALE: _ClassVar[OutcomeAckResult]
HANDLER_RESULT_UNSPECIFIED: HandlerResult
HANDLER_RESULT_SUCCEEDED: HandlerResult
HANDLER_RESULT_FAILED: HandlerResult
HANDLER_RESULT_TIMED_OUT: HandlerResult
HANDLER_RESULT_CANCELLED: HandlerResult
LEASE_LOST_REASON_UNSPECIFIED: LeaseLostReason
LEASE_LOST_REASON_STALE_GENERATION: LeaseLostReason
LEASE_LOST_REASON_EXPIRED: LeaseLostReason
LEASE_LOST_REASON_CANCELLED: LeaseLostReason
LEASE_LOST_REASON_NOT_FOUND: LeaseLostReason
OUTCOME_ACK_RESULT_UNSPECIFIED: OutcomeAckResult
OUTCOME_ACK_RESULT_RECORDED: OutcomeAckResult
OUTCOME_ACK_RESULT_STALE: OutcomeAckResult

class LeaseRef(_message.Message):
    __slots__ = ("job_id", "lease_generation")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_GENERATION_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    lease_generation: int
    def __init__(self, job_id: _Optional[str] = ..., lease_generation: _Optional[int] = ...) -> None: ...

class AgentMessage(_message.Message):
    __slots__ = ("hello", "heartbeat", "outcomes", "release", "draining", "withdraw_refused")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    DRAINING_FIELD_NUMBER: _ClassVar[int]
    WITHDRAW_REFUSED_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    heartbeat: Heartbeat
    outcomes: Outcomes
    release: Release
    draining: Draining
    withdraw_refused: WithdrawRefused
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., outcomes: _Optional[_Union[Outcomes, _Mapping]] = ..., release: _Optional[_Union[Release, _Mapping]] = ..., draining: _Optional[_Union[Draining, _Mapping]] = ..., withdraw_refused: _Optional[_Union[WithdrawRefused, _Mapping]] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("agent_id", "tasks", "capacity", "held_leases", "version", "payload_schemas", "pre_dispatch", "pre_dispatch_queue", "slots_free_on_outcome")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    HELD_LEASES_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_SCHEMAS_FIELD_NUMBER: _ClassVar[int]
    PRE_DISPATCH_FIELD_NUMBER: _ClassVar[int]
    PRE_DISPATCH_QUEUE_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FREE_ON_OUTCOME_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    tasks: _containers.RepeatedScalarFieldContainer[str]
    capacity: int
    held_leases: _containers.RepeatedCompositeFieldContainer[LeaseRef]
    version: str
    payload_schemas: _containers.RepeatedCompositeFieldContainer[TaskPayloadSchema]
    pre_dispatch: bool
    pre_dispatch_queue: int
    slots_free_on_outcome: bool
    def __init__(self, agent_id: _Optional[str] = ..., tasks: _Optional[_Iterable[str]] = ..., capacity: _Optional[int] = ..., held_leases: _Optional[_Iterable[_Union[LeaseRef, _Mapping]]] = ..., version: _Optional[str] = ..., payload_schemas: _Optional[_Iterable[_Union[TaskPayloadSchema, _Mapping]]] = ..., pre_dispatch: _Optional[bool] = ..., pre_dispatch_queue: _Optional[int] = ..., slots_free_on_outcome: _Optional[bool] = ...) -> None: ...

class TaskPayloadSchema(_message.Message):
    __slots__ = ("task", "json_schema")
    TASK_FIELD_NUMBER: _ClassVar[int]
    JSON_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    task: str
    json_schema: str
    def __init__(self, task: _Optional[str] = ..., json_schema: _Optional[str] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("seq", "leases")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    LEASES_FIELD_NUMBER: _ClassVar[int]
    seq: int
    leases: _containers.RepeatedCompositeFieldContainer[LeaseRef]
    def __init__(self, seq: _Optional[int] = ..., leases: _Optional[_Iterable[_Union[LeaseRef, _Mapping]]] = ...) -> None: ...

class Outcomes(_message.Message):
    __slots__ = ("outcomes",)
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[LeaseOutcome]
    def __init__(self, outcomes: _Optional[_Iterable[_Union[LeaseOutcome, _Mapping]]] = ...) -> None: ...

class LeaseOutcome(_message.Message):
    __slots__ = ("job_id", "lease_generation", "result", "error", "finished_at", "traceparent")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_GENERATION_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    lease_generation: int
    result: HandlerResult
    error: str
    finished_at: _timestamp_pb2.Timestamp
    traceparent: str
    def __init__(self, job_id: _Optional[str] = ..., lease_generation: _Optional[int] = ..., result: _Optional[_Union[HandlerResult, str]] = ..., error: _Optional[str] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., traceparent: _Optional[str] = ...) -> None: ...

class Release(_message.Message):
    __slots__ = ("leases", "reason")
    LEASES_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    leases: _containers.RepeatedCompositeFieldContainer[LeaseRef]
    reason: str
    def __init__(self, leases: _Optional[_Iterable[_Union[LeaseRef, _Mapping]]] = ..., reason: _Optional[str] = ...) -> None: ...

class Draining(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CoordinatorMessage(_message.Message):
    __slots__ = ("welcome", "assignments", "renew_reply", "outcome_acks", "revoke", "drain", "withdraw")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    RENEW_REPLY_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_ACKS_FIELD_NUMBER: _ClassVar[int]
    REVOKE_FIELD_NUMBER: _ClassVar[int]
    DRAIN_FIELD_NUMBER: _ClassVar[int]
    WITHDRAW_FIELD_NUMBER: _ClassVar[int]
    welcome: Welcome
    assignments: Assignments
    renew_reply: RenewReply
    outcome_acks: OutcomeAcks
    revoke: Revoke
    drain: Drain
    withdraw: Withdraw
    def __init__(self, welcome: _Optional[_Union[Welcome, _Mapping]] = ..., assignments: _Optional[_Union[Assignments, _Mapping]] = ..., renew_reply: _Optional[_Union[RenewReply, _Mapping]] = ..., outcome_acks: _Optional[_Union[OutcomeAcks, _Mapping]] = ..., revoke: _Optional[_Union[Revoke, _Mapping]] = ..., drain: _Optional[_Union[Drain, _Mapping]] = ..., withdraw: _Optional[_Union[Withdraw, _Mapping]] = ...) -> None: ...

class Welcome(_message.Message):
    __slots__ = ("coordinator_id", "lease_ms", "heartbeat_interval_ms", "db_time_ms", "db_time_error_ms", "held_ms")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_MS_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    DB_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    DB_TIME_ERROR_MS_FIELD_NUMBER: _ClassVar[int]
    HELD_MS_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lease_ms: int
    heartbeat_interval_ms: int
    db_time_ms: float
    db_time_error_ms: float
    held_ms: float
    def __init__(self, coordinator_id: _Optional[str] = ..., lease_ms: _Optional[int] = ..., heartbeat_interval_ms: _Optional[int] = ..., db_time_ms: _Optional[float] = ..., db_time_error_ms: _Optional[float] = ..., held_ms: _Optional[float] = ...) -> None: ...

class Assignments(_message.Message):
    __slots__ = ("assignments",)
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    assignments: _containers.RepeatedCompositeFieldContainer[Assignment]
    def __init__(self, assignments: _Optional[_Iterable[_Union[Assignment, _Mapping]]] = ...) -> None: ...

class Assignment(_message.Message):
    __slots__ = ("job_id", "run_id", "task", "attempt", "max_attempts", "lease_generation", "lease_remaining_ms", "timeout_ms", "scheduled_for", "anchor_seq", "payload_json", "traceparent", "start_at_ms")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    LEASE_GENERATION_FIELD_NUMBER: _ClassVar[int]
    LEASE_REMAINING_MS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_FOR_FIELD_NUMBER: _ClassVar[int]
    ANCHOR_SEQ_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_JSON_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    START_AT_MS_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    run_id: str
    task: str
    attempt: int
    max_attempts: int
    lease_generation: int
    lease_remaining_ms: int
    timeout_ms: int
    scheduled_for: _timestamp_pb2.Timestamp
    anchor_seq: int
    payload_json: str
    traceparent: str
    start_at_ms: float
    def __init__(self, job_id: _Optional[str] = ..., run_id: _Optional[str] = ..., task: _Optional[str] = ..., attempt: _Optional[int] = ..., max_attempts: _Optional[int] = ..., lease_generation: _Optional[int] = ..., lease_remaining_ms: _Optional[int] = ..., timeout_ms: _Optional[int] = ..., scheduled_for: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., anchor_seq: _Optional[int] = ..., payload_json: _Optional[str] = ..., traceparent: _Optional[str] = ..., start_at_ms: _Optional[float] = ...) -> None: ...

class RenewReply(_message.Message):
    __slots__ = ("seq", "statuses", "db_time_ms", "db_time_error_ms", "held_ms")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    STATUSES_FIELD_NUMBER: _ClassVar[int]
    DB_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    DB_TIME_ERROR_MS_FIELD_NUMBER: _ClassVar[int]
    HELD_MS_FIELD_NUMBER: _ClassVar[int]
    seq: int
    statuses: _containers.RepeatedCompositeFieldContainer[LeaseStatus]
    db_time_ms: float
    db_time_error_ms: float
    held_ms: float
    def __init__(self, seq: _Optional[int] = ..., statuses: _Optional[_Iterable[_Union[LeaseStatus, _Mapping]]] = ..., db_time_ms: _Optional[float] = ..., db_time_error_ms: _Optional[float] = ..., held_ms: _Optional[float] = ...) -> None: ...

class LeaseStatus(_message.Message):
    __slots__ = ("job_id", "lease_generation", "remaining_ms", "lost", "abort_requested")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_GENERATION_FIELD_NUMBER: _ClassVar[int]
    REMAINING_MS_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    ABORT_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    lease_generation: int
    remaining_ms: int
    lost: LeaseLost
    abort_requested: bool
    def __init__(self, job_id: _Optional[str] = ..., lease_generation: _Optional[int] = ..., remaining_ms: _Optional[int] = ..., lost: _Optional[_Union[LeaseLost, _Mapping]] = ..., abort_requested: _Optional[bool] = ...) -> None: ...

class LeaseLost(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: LeaseLostReason
    def __init__(self, reason: _Optional[_Union[LeaseLostReason, str]] = ...) -> None: ...

class OutcomeAcks(_message.Message):
    __slots__ = ("acks",)
    ACKS_FIELD_NUMBER: _ClassVar[int]
    acks: _containers.RepeatedCompositeFieldContainer[OutcomeAck]
    def __init__(self, acks: _Optional[_Iterable[_Union[OutcomeAck, _Mapping]]] = ...) -> None: ...

class OutcomeAck(_message.Message):
    __slots__ = ("job_id", "lease_generation", "result")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_GENERATION_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    lease_generation: int
    result: OutcomeAckResult
    def __init__(self, job_id: _Optional[str] = ..., lease_generation: _Optional[int] = ..., result: _Optional[_Union[OutcomeAckResult, str]] = ...) -> None: ...

class Revoke(_message.Message):
    __slots__ = ("leases", "reason")
    LEASES_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    leases: _containers.RepeatedCompositeFieldContainer[LeaseRef]
    reason: LeaseLostReason
    def __init__(self, leases: _Optional[_Iterable[_Union[LeaseRef, _Mapping]]] = ..., reason: _Optional[_Union[LeaseLostReason, str]] = ...) -> None: ...

class Withdraw(_message.Message):
    __slots__ = ("leases",)
    LEASES_FIELD_NUMBER: _ClassVar[int]
    leases: _containers.RepeatedCompositeFieldContainer[LeaseRef]
    def __init__(self, leases: _Optional[_Iterable[_Union[LeaseRef, _Mapping]]] = ...) -> None: ...

class WithdrawRefused(_message.Message):
    __slots__ = ("leases",)
    LEASES_FIELD_NUMBER: _ClassVar[int]
    leases: _containers.RepeatedCompositeFieldContainer[LeaseRef]
    def __init__(self, leases: _Optional[_Iterable[_Union[LeaseRef, _Mapping]]] = ...) -> None: ...

class Drain(_message.Message):
    __slots__ = ("grace_ms",)
    GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    grace_ms: int
    def __init__(self, grace_ms: _Optional[int] = ...) -> None: ...
