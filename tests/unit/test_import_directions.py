"""Imports flow one way: report/ renders from the model and stats/ only (what it needs of workloads,
databases and risks is recorded with the run), and stats/ imports only the model."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "pickfs"
ALLOWED = {"report": ("pickfs.model", "pickfs.fsfacts", "pickfs.stats", "pickfs.report"),
           "stats": ("pickfs.model", "pickfs.stats")}


def module_level_imports(path: Path) -> list[str]:
    """The pickfs modules a file imports when it is loaded (imports inside functions are deferred)."""
    out = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pickfs"):
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("pickfs")]
    return out


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_what_it_may(package):
    wrong = [f"{path.name}: {mod}" for path in sorted((SRC / package).glob("*.py"))
             for mod in module_level_imports(path) if not mod.startswith(ALLOWED[package])]
    assert wrong == [], wrong


# The use case and the engine under it show nothing and know no command: the CLI and a fleet host call them.
ABOVE = ("pickfs.cli", "pickfs.console", "pickfs.report", "pickfs.run_console", "pickfs.fleet")
NOT_ALLOWED = {"usecases": ABOVE, "engine": (*ABOVE, "pickfs.usecases")}


@pytest.mark.parametrize("package", sorted(NOT_ALLOWED))
def test_package_imports_nothing_above_it(package):
    wrong = [f"{path.name}: {mod}" for path in sorted((SRC / package).glob("*.py"))
             for mod in module_level_imports(path) if mod.startswith(NOT_ALLOWED[package])]
    assert wrong == [], wrong


def test_rendering_a_stored_run_loads_no_workload_service_or_risk_table():
    code = ("import sys; from pickfs.report import html, markdown, terminal, json_export, csv_export; "
            "print(sorted(m for m in sys.modules if m.startswith(('pickfs.workloads', 'pickfs.services', "
            "'pickfs.risks', 'pickfs.monitors', 'pickfs.stack', 'pickfs.engine'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_a_run_records_what_its_reports_need_and_they_read_it(store):
    from pickfs.cli.run import plan_record
    from pickfs.model import Method, Plan, Target, Trial, WorkloadSpec
    from pickfs.report.views import build_views
    from pickfs.stack.presets import PRESETS

    spec = WorkloadSpec("sqlite-tpcb", "s", (("synchronous", "OFF"),))
    plan = Plan(Target(), (PRESETS["ext4"], PRESETS["ext4-nobarrier"]), (spec,), Method(runs=1, warmup=0))
    d = plan_record(plan)
    assert d["workloads"][0]["database"] == "sqlite"
    assert d["workloads"][0]["risks"][0].startswith("synchronous=OFF")
    assert d["configs"][0]["risks"] == [] and d["configs"][1]["risks"][0].startswith("nobarrier")
    d["configs"][0]["risks"] = ["recorded: as the run said"]  # reports read the record, not today's tables
    store.create_run("20260101-000000-abcd", "0.1.0", d, {"hostname": "box"})
    for cell in (0, 1):
        store.save_trial(Trial(run_id="20260101-000000-abcd", cell_index=cell, repetition=0, phase="measured",
                               started=1.0, elapsed_s=1.0, ok=True, metrics={"tps": 100.0}))
    [view] = build_views(store.load("20260101-000000-abcd"))
    assert view.rows[0].risks[0] == "recorded: as the run said" and view.rows[0].risks[1].startswith("synchronous")
