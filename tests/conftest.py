"""The library tests' fixtures and hooks: :mod:`shared_fixtures` (the lab's tests load the same)."""

import pytest
from shared_fixtures import *  # noqa: F401,F403


@pytest.fixture
def worker_requests(monkeypatch):
    """Every request :func:`re2_tf.benchmarking.run_worker` gets during the test, in order:
    the real worker runs each (a spy, not a fake)."""
    from re2_tf import benchmarking

    requests, real = [], benchmarking.run_worker

    def run_worker(script, request, **kw):
        requests.append(request)
        return real(script, request, **kw)

    monkeypatch.setattr(benchmarking, "run_worker", run_worker)
    return requests
