"""The lab's tests reuse the library tests' fixtures, hooks and helpers: ``tests/`` is put on
``sys.path`` (``tests/registered.py``, ``tests/model_scaffolding.py``, ...) and
``tests/shared_fixtures.py`` is loaded as in ``tests/conftest.py``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from shared_fixtures import *  # noqa: E402,F401,F403
