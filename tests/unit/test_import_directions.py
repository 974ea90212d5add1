"""Imports flow one way. Every package and top-level module of src/pickfs has a rule: the parts of pickfs it may
import (besides itself). The CLI sits on top, then the fleet and the engine; a database stands on the model and a
few helpers, never on the servers, the stack or the workloads above it; report/ renders from the model and stats/
only (what it needs of workloads, databases and risks is recorded with the run), and stats/ imports only the model.
Every import counts: at module level, inside a function (deferred) and for type checking alike."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "pickfs"

BASE = {"model", "errors", "units", "fsfacts"}  # what anything may use (fsfacts: pure facts of filesystem types)
ALLOWED: dict[str, set[str]] = {
    "pickfs": set(),  # the package itself: its version
    "__main__": {"cli"},
    "cli": {"*"},  # the top: anything
    "usecases": BASE | {"pickfs", "plan", "engine", "crash", "workloads", "risks", "stack", "store", "host", "safepaths"},
    "search": BASE | {"engine", "plan", "risks", "stack", "stats", "store", "usecases", "workloads", "analysis"},
    "run_console": BASE | {"console", "engine", "report", "workloads"},  # the progress the CLI and a fleet host show
    "fleet": BASE | {"pickfs", "console", "run_console", "usecases", "report", "engine", "plan", "store", "stack", "safepaths", "host"},
    "engine": BASE | {"analysis", "plan", "crash", "workloads", "services", "stack", "databases", "monitors", "store", "stats",
                      "risks", "fingerprint", "host", "proc", "safepaths", "sysinfo"},
    "plan": BASE | {"crash", "faults", "workloads", "services", "databases", "stack", "stats", "safepaths"},
    "crash": BASE | {"workloads", "services", "stack", "databases", "risks", "proc", "safepaths", "sysinfo", "monitors"},
    "risks": BASE | {"databases", "workloads"},
    # I/O errors injected under a configuration: the recorder's fault switch, the stack, the servers, the clients
    "faults": BASE | {"crash", "stack", "services", "databases", "clients", "proc", "safepaths"},
    "workloads": BASE | {"services", "stack", "databases", "clients", "stats", "proc", "safepaths", "sysinfo",
                         "monitors"},
    "services": BASE | {"stack", "databases", "proc", "safepaths", "sysinfo", "monitors"},
    "clients": BASE | {"databases"},
    "host": BASE | {"pickfs", "fingerprint", "stack", "sysinfo", "proc"},
    "fingerprint": BASE | {"stack", "sysinfo", "databases", "proc"},
    "stack": BASE | {"proc", "safepaths", "monitors", "sysinfo"},
    "databases": BASE | {"proc", "safepaths", "sysinfo"},
    "monitors": BASE | {"proc", "sysinfo", "stack"},  # a filesystem type's journal and threads (stack/filesystems.py)
    "store": BASE | {"safepaths"},
    "analysis": {"model", "fsfacts", "stats"},
    "report": {"model", "fsfacts", "stats", "analysis"},
    # stats/ stays pure statistics on the model: what the race's preference asks of a filesystem type (the
    # distribution's default, a legacy format) is a parameter (stats.decision.TypeFacts, a Protocol that
    # fsfacts.FsFacts meets), passed by the analysis's judge; stats/ never looks a type up itself
    "stats": {"model"},
    "proc": BASE | {"safepaths"},
    "safepaths": {"errors", "units"},
    "sysinfo": set(),
    "console": set(),
    "units": {"errors"},
    "errors": set(),
    "model": set(),
    "fsfacts": set(),
    "suites": set(),
}

# Imports against the direction today, each to be removed by moving what is imported to where it belongs (a test
# below fails when one is gone, so that it leaves this list too): (importing file, module imported).
KNOWN: set[tuple[str, str]] = {
    ("proc.py", "pickfs.stack.filesystems"),  # `which` and SBIN_PATH live in stack/, which imports proc
    ("databases/base.py", "pickfs.services.base"),  # Endpoint, for type checking
    ("databases/base.py", "pickfs.services"),  # service_class, deferred
    ("databases/firebird.py", "pickfs.services.base"),
    ("databases/firebird.py", "pickfs.stack.filesystems"),
    ("databases/firebird.py", "pickfs.stack.workdir"),
    ("databases/mariadb.py", "pickfs.services.base"),
    ("databases/mariadb.py", "pickfs.services.mariadb"),  # SETTINGS
    ("databases/postgresql.py", "pickfs.services.base"),
    ("databases/postgresql.py", "pickfs.services.postgresql"),  # SETTINGS
    ("databases/sqlite.py", "pickfs.services.base"),
    ("analysis/views.py", "pickfs.risks"),  # runs stored before risks were recorded
    ("analysis/views.py", "pickfs.workloads"),  # runs stored before workload kinds were recorded
}


def unit(module: str) -> str:
    """The package or top-level module of pickfs a dotted name belongs to: pickfs.stack.cgroups -> stack; the
    package's own __init__ and what it holds (__version__) -> pickfs."""
    name = module.split(".")[1] if "." in module else "__init__"
    if name != "__init__" and ((SRC / name).is_dir() or (SRC / f"{name}.py").is_file()):
        return name
    return "pickfs"


def units_of_src() -> set[str]:
    return {p.stem if p.is_file() else p.name for p in SRC.iterdir()
            if (p.is_dir() and (p / "__init__.py").is_file()) or (p.suffix == ".py" and p.stem != "__init__")} | {"pickfs"}


def imports(path: Path) -> list[str]:
    """The pickfs modules a file imports anywhere in it (module level, in functions, for type checking)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("pickfs"):
            out += [node.module] if node.module != "pickfs" else [f"pickfs.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.split(".")[0] == "pickfs"]
    return out


def module_level_imports(path: Path) -> list[str]:
    """The pickfs modules a file imports when it is loaded (imports inside functions are deferred)."""
    out = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pickfs"):
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("pickfs")]
    return out


def against_the_direction() -> set[tuple[str, str]]:
    wrong = set()
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        own = unit("pickfs." + ".".join(rel.with_suffix("").parts))
        may = ALLOWED[own]
        for mod in imports(path):
            if "*" not in may and unit(mod) != own and unit(mod) not in may:
                wrong.add((rel.as_posix(), mod))
    return wrong


def test_every_package_and_module_has_a_rule():
    assert units_of_src() == set(ALLOWED)


def test_every_package_imports_only_what_it_may():
    assert sorted(against_the_direction() - KNOWN) == []


def test_the_known_exceptions_are_still_there():
    """A known exception that is gone leaves the list (the rule then holds for it)."""
    assert sorted(KNOWN - against_the_direction()) == []


@pytest.mark.parametrize("package", ["analysis", "report", "stats"])
def test_report_and_stats_load_only_the_model_and_stats(package):
    wrong = [f"{path.name}: {mod}" for path in sorted((SRC / package).glob("*.py"))
             for mod in module_level_imports(path) if unit(mod) not in ALLOWED[package] | {package}]
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
    from pickfs.analysis.run import build_views
    from pickfs.model import Method, Plan, Target, Trial, WorkloadSpec
    from pickfs.stack.presets import PRESETS
    from pickfs.usecases.run import plan_record

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


def module_name(path: Path) -> str:
    return "pickfs." + ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")


@pytest.mark.parametrize("package", ["analysis", "report"])
def test_no_import_circle_inside(package):
    """The analysis and the report import one another's modules in one direction only (deferred imports too):
    a circle is a module that belongs elsewhere."""
    graph = {module_name(p): {m for m in imports(p) if m.startswith(f"pickfs.{package}.")}
             for p in sorted((SRC / package).glob("*.py"))}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and (seen.add(nxt) or reaches(nxt, goal, seen))):
                return True
        return False

    assert sorted(m for m in graph if reaches(m, m, set())) == []


def test_the_search_reads_its_stages_without_the_report(tmp_path):
    """`pickfs search` reads each stage's race through the analysis: neither plotly nor rich is loaded, not even
    when a stored run is analysed."""
    import gzip

    db = tmp_path / "results.db"
    db.write_bytes(gzip.decompress((SRC.parents[1] / "tests" / "data" / "real-runs.db.gz").read_bytes()))
    code = ("import sys; import pickfs.search.stages as stages, pickfs.search.driver; from pickfs.store import "
            f"ResultStore; store = ResultStore({str(db)!r}); "
            "[stages.build_views(store.load(r.id)) for r in store.list_runs()]; "
            "print(sorted(m for m in ('plotly', 'rich') if m in sys.modules), "
            "sorted(m for m in sys.modules if m.startswith('pickfs.report')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] []", out
