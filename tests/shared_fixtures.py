"""Shared pytest fixtures and hooks of the library tests and the lab tests (each directory's
``conftest.py`` imports them)."""

import os
import re
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def shared_data() -> Path:
    """The staged benchmark data (``$RE2_SHARED_DATA`` or ``<repo>/../shared/data``); skips if
    absent."""
    path = Path(
        os.environ.get("RE2_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
    )
    if not path.is_dir():
        pytest.skip(f"shared data not available at {path}")
    return path


@pytest.fixture
def shared_papers() -> Path:
    """The papers' text (``$RE2_SHARED_PAPERS`` or ``<repo>/../shared/papers``, one
    ``<name>.md`` per paper); skips if absent."""
    path = Path(
        os.environ.get(
            "RE2_SHARED_PAPERS", Path(__file__).resolve().parents[2] / "shared" / "papers"
        )
    )
    if not path.is_dir():
        pytest.skip(f"papers not available at {path}")
    return path


def _group_safe(value):
    """``value`` as text without ``[``, ``]`` and ``@``: xdist takes a node id's group to be
    what follows its last ``@``, and only if that ``@`` comes after the last ``]``."""
    return re.sub(r"[\[\]@]", "_", str(value))


def _fixture_definitions(item):
    """``{fixture name: (pytest.FixtureDef, ...)}`` of a collected test function.

    pytest has no public way to read a fixture's scope at collection time: ``item.fixturenames``
    (public) gives the names only, and the definitions live in the private
    ``item._fixtureinfo.name2fixturedefs`` (pytest 8-9). This is the one use of it; it fails
    loudly, naming the internal, when pytest changes it (``tests/test_compat.py`` checks the
    grouping end to end).
    """
    try:
        return dict(item._fixtureinfo.name2fixturedefs)
    except AttributeError as error:
        raise RuntimeError(
            f"pytest {pytest.__version__}: Function._fixtureinfo.name2fixturedefs "
            f"(private) is gone ({error}); tests/conftest.py cannot group tests "
            "sharing a module-scoped fixture"
        ) from error


def _tier_by_parameter(item):
    """Mark one parametrisation of a test with its tier (``slow``, ``long``; none = the
    default suite), from its module's ``TIERS = {test name: ({parameter id: tier or None},
    tier of the other ids)}``, or, for a test not named there, from ``FIXTURE_TIERS =
    {fixture name: ({fixture parameter: tier or None}, tier of the other parameters)}`` for
    the parametrised fixture it uses: a heavy per-model check runs on RE2 in one tier and on
    the other models in a later one."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return
    tiers = getattr(item.module, "TIERS", {})
    by_fixture = getattr(item.module, "FIXTURE_TIERS", {})
    fixture = next((name for name in by_fixture if name in callspec.params), None)
    if item.originalname in tiers:
        (chosen, others), key = tiers[item.originalname], callspec.id
    elif fixture is not None:
        (chosen, others), key = by_fixture[fixture], callspec.params[fixture]
    else:
        return
    tier = chosen.get(key, others)
    if tier is not None:
        item.add_marker(getattr(pytest.mark, tier))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist and -m read the marks
def pytest_collection_modifyitems(config, items):
    """Keep the tests that share a module-scoped fixture (one export, one training run, one
    loaded backbone) on one pytest-xdist worker (``--dist loadgroup`` in pytest.ini).

    Under plain ``--dist load`` the tests of one fixture instance are spread over both
    workers, and each worker builds its own copy (an export, an XLA compile, a training
    run): up to twice the time. Tests using no such fixture are distributed freely.
    """
    for item in items:
        if not isinstance(item, pytest.Function):
            continue  # e.g. doctest items: no fixtures of their own
        _tier_by_parameter(item)
        definitions = _fixture_definitions(item)
        params = getattr(getattr(item, "callspec", None), "params", {})
        shared = sorted(
            f"{name}={_group_safe(params[name])}" if name in params else name
            for name in item.fixturenames
            if any(d.scope == "module" for d in definitions.get(name, ()))
        )
        if shared:
            item.add_marker(pytest.mark.xdist_group(f"{item.module.__name__}:{'+'.join(shared)}"))
