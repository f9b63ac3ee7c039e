"""The scenario tests run against a live coordinator and agent (started by the
repository's jest suite, clients/clients.pg.test.ts), given by:

- KAIROS_COORDINATOR: its gRPC address;
- KAIROS_TOKEN: a writer token of the namespace the agent (tasks: sleep) serves;
- KAIROS_OTHER_TOKEN: a writer token of another namespace;
- KAIROS_TLS_COORDINATOR, KAIROS_TLS_CA, KAIROS_TLS_CLIENT_CERT,
  KAIROS_TLS_CLIENT_KEY: a coordinator on the same store that requires TLS
  with client certificates, and the PEM files to reach it.
"""

import os
import time
from typing import Callable, TypeVar

import pytest

from kairos_client import Client

T = TypeVar("T")


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run these tests through clients/clients.pg.test.ts (npm test)")
    return value


@pytest.fixture(scope="session")
def kairos() -> Client:
    with Client(_env("KAIROS_COORDINATOR"), token=_env("KAIROS_TOKEN")) as client:
        yield client


@pytest.fixture(scope="session")
def other_namespace() -> Client:
    with Client(_env("KAIROS_COORDINATOR"), token=_env("KAIROS_OTHER_TOKEN")) as client:
        yield client


@pytest.fixture(scope="session")
def anonymous() -> Client:
    with Client(_env("KAIROS_COORDINATOR"), token="") as client:
        yield client


def eventually(check: Callable[[], T], what: str, timeout: float = 60.0) -> T:
    """Polls ``check`` until it returns a truthy value (returned), failing after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)
