"""`python -m pickfs.suites.r1 [PYTEST ARGS]`: run R1's suite with pytest, writing nothing beside it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


def main(argv: list[str]) -> int:
    sys.dont_write_bytecode = True  # no __pycache__ next to the installed suite
    here = Path(__file__).resolve().parent
    return int(pytest.main([str(here), "-q", "-p", "no:cacheprovider", "--rootdir", str(here), *argv]))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
