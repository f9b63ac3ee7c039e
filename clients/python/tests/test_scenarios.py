"""The scenario list every Kairos client runs (Python, Go, TypeScript): see docs/clients.md."""

import uuid
from datetime import datetime, timedelta, timezone

import pytest

import os
from pathlib import Path

from conftest import eventually, _env
from kairos_client import AlreadyExists, Client, InvalidArgument, JobClaimed, NotFound, Unauthenticated, Unavailable


def now() -> datetime:
    return datetime.now(timezone.utc)


def test_one_off_job_runs_once(kairos):
    job = kairos.create_job("sleep", run_at=now(), payload={"seconds": 0}).job
    done = eventually(lambda: kairos.get_job(job.job_id).state == "COMPLETED" and kairos.get_job(job.job_id), "COMPLETED")
    runs = list(kairos.list_runs(job.job_id))
    assert [run.outcome for run in runs] == ["SUCCEEDED"]
    assert runs[0].lease_generation == done.lease_generation
    assert done.schedule is None and done.run_at is not None and done.timeout_seconds is None


def test_recurring_job_runs_distinct_occurrences(kairos):
    job = kairos.create_job("sleep", schedule="*/2 * * * * *", payload={"seconds": 0}).job
    assert job.schedule == "*/2 * * * * *" and job.run_at is None
    runs = eventually(
        lambda: (lambda rs: rs if len({r.scheduled_for for r in rs if r.outcome == "SUCCEEDED"}) >= 2 else None)(list(kairos.list_runs(job.job_id))),
        "two occurrences",
    )
    succeeded = [run for run in runs if run.outcome == "SUCCEEDED"]
    assert len({run.scheduled_for for run in succeeded}) == len(succeeded)
    assert all(run.scheduled_for.second % 2 == 0 for run in succeeded)
    stop(kairos, job.job_id)


def stop(kairos, job_id):
    """Cancels a job; when an agent holds it, aborts the run and the schedule."""
    try:
        kairos.cancel_job(job_id)
    except JobClaimed:
        kairos.abort_run(job_id, stop_schedule=True)


def test_cancel_before_due(kairos):
    job = kairos.create_job("sleep", run_at=now() + timedelta(hours=1), payload={"seconds": 0}).job
    kairos.cancel_job(job.job_id)
    assert kairos.get_job(job.job_id).state == "CANCELLED"
    assert list(kairos.list_runs(job.job_id)) == []


def test_cancel_of_a_running_job_names_who_holds_it(kairos):
    job = kairos.create_job("sleep", run_at=now(), payload={"seconds": 30}).job
    claimed = eventually(lambda: (lambda j: j if j.state == "CLAIMED" else None)(kairos.get_job(job.job_id)), "CLAIMED")
    with pytest.raises(JobClaimed) as raised:
        kairos.cancel_job(job.job_id)
    error = raised.value
    assert error.reason == "JOB_CLAIMED"
    assert error.claim.lease_generation == claimed.lease_generation > 0
    assert error.claim.agent_id == claimed.lease_owner
    assert error.claim.run_id
    aborted = kairos.abort_run(job.job_id)
    assert aborted.run_id == error.claim.run_id
    eventually(lambda: kairos.get_job(job.job_id).state == "CANCELLED", "CANCELLED after abort")
    assert [run.outcome for run in kairos.list_runs(job.job_id)] == ["CANCELLED"]


def test_unknown_id(kairos):
    with pytest.raises(NotFound) as raised:
        kairos.get_job(str(uuid.uuid4()))
    assert raised.value.reason == "JOB_NOT_FOUND"


def test_invalid_input_names_the_field(kairos):
    with pytest.raises(InvalidArgument) as raised:
        kairos.create_job("sleep", run_at=now(), payload={"seconds": 0}, max_attempts=1000)
    assert raised.value.field == "max_attempts"
    with pytest.raises(InvalidArgument) as raised:
        kairos.create_job("sleep", run_at=now())
    assert raised.value.field == "payload.seconds"
    with pytest.raises(InvalidArgument) as raised:
        kairos.create_job("sleep", schedule="not cron", payload={"seconds": 0})
    assert raised.value.field == "schedule"


def test_idempotency_key(kairos):
    key = f"py-{uuid.uuid4()}"
    first = kairos.create_job("sleep", run_at=now() + timedelta(hours=1), payload={"seconds": 0}, idempotency_key=key)
    again = kairos.create_job("sleep", run_at=first.job.run_at, payload={"seconds": 0}, idempotency_key=key)
    assert first.created and not again.created
    assert again.job.job_id == first.job.job_id
    with pytest.raises(AlreadyExists) as raised:
        kairos.create_job("sleep", run_at=first.job.run_at, payload={"seconds": 1}, idempotency_key=key)
    assert raised.value.reason == "IDEMPOTENCY_KEY_REUSED"
    kairos.cancel_job(first.job.job_id)


def test_batch_create_answers_each_job(kairos):
    key = f"py-batch-{uuid.uuid4()}"
    later = now() + timedelta(hours=1)
    results = kairos.create_jobs(
        [
            {"task": "sleep", "run_at": now(), "payload": {"seconds": 0}},
            {"task": "sleep", "schedule": "not cron", "payload": {"seconds": 0}},
            {"task": "sleep", "run_at": later, "payload": {"seconds": 0}, "idempotency_key": key},
            {"task": "sleep", "run_at": later, "payload": {"seconds": 0}, "idempotency_key": key},
        ]
    )
    assert [(r.created, r.error is None) for r in results] == [(True, True), (False, False), (True, True), (False, True)]
    assert isinstance(results[1].error, InvalidArgument) and results[1].error.field == "schedule"
    assert results[3].job_id == results[2].job_id
    eventually(lambda: kairos.get_job(results[0].job_id).state == "COMPLETED", "COMPLETED")
    assert [run.outcome for run in kairos.list_runs(results[0].job_id)] == ["SUCCEEDED"]
    kairos.cancel_job(results[2].job_id)


def test_paging_through_250_jobs(kairos):
    task = f"page-{uuid.uuid4().hex[:12]}"
    later = now() + timedelta(days=1)
    created = {kairos.create_job(task, run_at=later).job.job_id for _ in range(250)}
    first = kairos.list_jobs_page(task=task, limit=100)
    assert len(first.items) == 100 and first.next_cursor is not None
    listed = [job.job_id for job in kairos.list_jobs(task=task, page_size=100)]
    assert len(listed) == 250 and set(listed) == created
    with pytest.raises(InvalidArgument) as raised:
        kairos.list_jobs_page(task=task, cursor="not-a-cursor")
    assert raised.value.field == "cursor"


def test_missing_token(anonymous):
    with pytest.raises(Unauthenticated):
        anonymous.get_job(str(uuid.uuid4()))


def test_another_namespace_cannot_see_the_job(kairos, other_namespace):
    job = kairos.create_job("sleep", run_at=now() + timedelta(hours=1), payload={"seconds": 0}).job
    with pytest.raises(NotFound):
        other_namespace.get_job(job.job_id)
    with pytest.raises(NotFound):
        other_namespace.cancel_job(job.job_id)
    assert kairos.get_job(job.job_id).state == "DUE"
    kairos.cancel_job(job.job_id)


def test_mutual_tls():
    read = lambda name: Path(_env(name)).read_bytes()
    address, token = _env("KAIROS_TLS_COORDINATOR"), _env("KAIROS_TOKEN")
    with Client(address, token=token, root_certificates=read("KAIROS_TLS_CA"),
                client_certificate=read("KAIROS_TLS_CLIENT_CERT"), client_key=read("KAIROS_TLS_CLIENT_KEY"), timeout=5) as secure:
        job = secure.create_job("sleep", run_at=now() + timedelta(hours=1), payload={"seconds": 0}).job
        assert secure.get_job(job.job_id).state == "DUE"
        secure.cancel_job(job.job_id)
    # Without a client certificate the handshake fails: no call reaches the coordinator.
    with Client(address, token=token, root_certificates=read("KAIROS_TLS_CA"), timeout=5) as anonymous_tls:
        with pytest.raises(Unavailable):
            anonymous_tls.get_job(job.job_id)
