"""The library tests' fixtures and hooks: :mod:`shared_fixtures` (the lab's tests load the same)."""

from shared_fixtures import *  # noqa: F401,F403
