"""Shared pytest fixtures."""
import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def shared_data() -> Path:
    """The staged benchmark data (``$RE2_SHARED_DATA`` or ``<repo>/../shared/data``); skips if absent."""
    path = Path(os.environ.get("RE2_SHARED_DATA",
                               Path(__file__).resolve().parents[2] / "shared" / "data"))
    if not path.is_dir():
        pytest.skip(f"shared data not available at {path}")
    return path
