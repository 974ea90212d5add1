"""The gate that keeps the code this way: ruff (with a complexity limit) over src/ and tests/ alike, and mypy over
src/, clean. Both are configured in pyproject.toml and installed with the test extra; under CI a missing one fails."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tool(module: str, *args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed: pip install -e '.[test]'")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_ruff_finds_nothing_in_src_or_tests():
    r = _tool("ruff", "check", "src", "tests")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_finds_nothing_in_src():
    r = _tool("mypy")
    assert r.returncode == 0, r.stdout + r.stderr
