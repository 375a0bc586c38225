"""Build shim for tools that still run ``setup.py``: re2_tf is declared in pyproject.toml
(metadata, dependencies with their tested ranges, extras, console scripts); this file adds
nothing to it. Install with ``pip install -e ".[test]"`` (README, Set-up)."""

from setuptools import setup

setup()
