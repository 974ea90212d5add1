"""The gate that keeps the code this way: ruff (with a complexity limit) over src/ and tests/ alike, and mypy (strict)
over src/, clean. Both are configured in pyproject.toml and installed with the test extra; under CI a missing one fails.
And no module reaches into another's private names."""

from __future__ import annotations

import ast
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


# -- no private names across modules ------------------------------------------------------------------------------
SRC = ROOT / "src" / "pickfs"
PUBLIC_DESPITE_THE_UNDERSCORE = {"os._exit"}
# Private names used across modules today (file, expression): each to be made public where it is defined.
KNOWN_PRIVATE_USE = {
    ("fleet/callback/pickfs_events.py", "result._host"),  # Ansible's callback result: it has no public names
    ("fleet/callback/pickfs_events.py", "result._task"),  # (its `_result` is not told apart from the module's own)
}


def _defined_in(tree: ast.AST) -> set[str]:
    """Every name a module defines: functions, classes, variables, attributes it assigns, parameters."""
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(n.name)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            out.add(n.attr)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_use() -> set[tuple[str, str]]:
    """Private names of one module used in another: imported by name, or reached as an attribute of anything but
    self or cls (a subclass may use its base's) that the module itself does not define."""
    found = set()
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text())
        own, rel = _defined_in(tree), path.relative_to(SRC).as_posix()
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("pickfs"):
                found |= {(rel, f"from {n.module} import {a.name}") for a in n.names if _private(a.name)}
            elif isinstance(n, ast.Attribute) and _private(n.attr) and n.attr not in own \
                    and not (isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")):
                text = ast.unparse(n)
                if text not in PUBLIC_DESPITE_THE_UNDERSCORE:
                    found.add((rel, text))
    return found


def test_no_module_uses_another_modules_private_names():
    assert sorted(private_use() - KNOWN_PRIVATE_USE) == []


# An import inside a function is deferred only for a reason, said on its line: `# deferred: <why>` (a heavy library it
# would load at start-up, an import cycle, runs stored before something was recorded, a driver a client must not
# load). Imports deferred without such a comment, each with its reason: (file, module imported) -> why.
DEFERRED_WITHOUT_COMMENT: dict[tuple[str, str], str] = {}
DEFERRED = "# deferred: "


def deferred_imports(tree: ast.AST, lines: list[str]) -> list[tuple[int, str, bool]]:
    """Every import inside a function: (line, module, whether a line of it gives its reason)."""
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for n in ast.walk(fn):
            if isinstance(n, ast.Import | ast.ImportFrom):
                module = (n.module or "") if isinstance(n, ast.ImportFrom) else n.names[0].name
                said = any(DEFERRED in line and line.split(DEFERRED, 1)[1].strip()
                           for line in lines[n.lineno - 1:n.end_lineno])
                found.append((n.lineno, module, said))
    return sorted(set(found))


def unexplained_deferred_imports() -> list[str]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        text, rel = path.read_text(), path.relative_to(SRC).as_posix()
        out += [f"{rel}:{line}: {module}" for line, module, said in deferred_imports(ast.parse(text), text.splitlines())
                if not said and (rel, module) not in DEFERRED_WITHOUT_COMMENT]
    return out


def test_every_import_inside_a_function_says_why_it_is_deferred():
    """Start-up speed, a cycle, an old run's fallback or a client's driver: otherwise it belongs at the top."""
    assert unexplained_deferred_imports() == []


def test_the_deferred_import_check_sees_a_bare_one_and_a_reason():
    code = ("def f():\n    import glob\n\n\ndef g():\n    from pickfs.report.html import (  # deferred: plotly\n"
            "        page,\n    )\n\n\ndef h():\n    import numpy  # deferred:\n")
    assert deferred_imports(ast.parse(code), code.splitlines()) == [
        (2, "glob", False), (6, "pickfs.report.html", True), (12, "numpy", False)]


def test_every_allowed_deferred_import_is_still_there():
    """An allowed one that is gone (or now says its reason) leaves the list."""
    left = set()
    for path in sorted(SRC.rglob("*.py")):
        text, rel = path.read_text(), path.relative_to(SRC).as_posix()
        left |= {(rel, module) for _, module, said in deferred_imports(ast.parse(text), text.splitlines()) if not said}
    assert sorted(set(DEFERRED_WITHOUT_COMMENT) - left) == []
