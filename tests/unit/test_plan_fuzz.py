"""Fuzz: mutated versions of the shipped example plans, each checked by the dry run in-process.

Every mutant must end with exit code 0 (a valid plan) or 2 (a PlanError naming the fix, on one line),
never with a traceback or "internal error". Seeded, so a failure names the mutant that reproduces it.
"""

from __future__ import annotations

import copy
import json
import math
import random
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from pickfs.cli.main import main
from pickfs.workloads import REGISTRY

EXAMPLES = sorted((Path(__file__).parent.parent.parent / "examples").glob("*.toml"))
MUTANTS = 520
SEED = 20240605


# -- a small TOML writer (enough for plans: scalars, lists, tables, arrays of tables) ----------------
def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # JSON's escapes are TOML basic-string escapes
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def to_toml(data: dict[str, Any]) -> str:
    lines = []
    for k, v in data.items():  # plain keys first: after a [table] header they would belong to it
        if not isinstance(v, dict) and not (isinstance(v, list) and v and all(isinstance(x, dict) for x in v)):
            lines.append(f"{json.dumps(k)} = {_value(v)}")
    for k, v in data.items():
        if isinstance(v, dict):
            lines.append(f"[{json.dumps(k)}]")
            lines += [f"{json.dumps(a)} = {_value(b)}" for a, b in v.items()]
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for table in v:
                lines.append(f"[[{json.dumps(k)}]]")
                lines += [f"{json.dumps(a)} = {_value(b)}" for a, b in table.items()]
    return "\n".join(lines) + "\n"


# -- mutations -------------------------------------------------------------------------------------
HUGE = [2**63 - 1, -(2**63), 10**18, -1, 0, -10**9, 1e308, -1e308, 0.0, -0.5, math.nan, math.inf, -math.inf]
STRINGS = ["", " ", "x", "-L 'unbalanced", 'say "hi', "\\", "99999999T", "-5G", "nan", "1e400", "../../etc",
           "/dev/null", "\x00", "a\nb", "ext4", "fsync", "on", "🙂", "x" * 300]
UNKNOWN_KEYS = ["colour", "runz", "preset2", "fs_type", "Name", ""]
TOP_KEYS = ["target", "method", "config", "workload", "fs", "baseline"]
SETTING_KEYS = ["runs", "warmup", "blocks", "rounds", "slice_seconds", "max_seconds", "target_ci", "max_runs",
                "seed", "monitor_interval", "quiesce_seconds", "crash_states", "crash_size", "side_by_side",
                "size", "kind", "workdir", "paths", "preset", "name", "fs", "mkfs", "mount", "scheduler", "base",
                "label", "duration", "scale", "clients", "threads", "synchronous", "journal_mode", "files",
                "command", "server", "env", "timeout", "methods", "block_sizes", "seed", "backend"]


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.choice(["str", "int", "float", "bool", "list", "table", "nested", "huge", "empty"])
    if kind == "str":
        return rng.choice(STRINGS)
    if kind == "int":
        return rng.choice([1, 2, 3, 5, 100, 4096])
    if kind == "float":
        return rng.choice([0.1, 1.5, 2.0, 1e-9, 0.05])
    if kind == "bool":
        return rng.choice([True, False])
    if kind == "list":
        return [] if depth > 1 else [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == "table":
        return {} if depth > 1 else {rng.choice(SETTING_KEYS): random_value(rng, depth + 1)
                                     for _ in range(rng.randint(0, 2))}
    if kind == "nested":
        v: Any = rng.choice([1, "x", []])
        for _ in range(rng.randint(1, 6)):
            v = [v]
        return v
    if kind == "huge":
        return rng.choice(HUGE)
    return ""


def slots(data: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) in the plan, tables inside arrays included."""
    out = []
    if isinstance(data, dict):
        for k, v in data.items():
            out.append((data, k))
            out += slots(v)
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out.append((data, i))
            out += slots(v)
    return out


def tables(data: Any) -> list[dict]:
    out = [data] if isinstance(data, dict) else []
    children = data.values() if isinstance(data, dict) else data if isinstance(data, list) else []
    for v in children:
        out += tables(v)
    return out


def mutate(data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    op = rng.choice(["drop", "type", "type", "range", "range", "empty", "quote", "unknown", "add",
                     "setting", "setting", "setting"])
    places = slots(data)
    workloads = [w for w in data.get("workload", []) if isinstance(w, dict)] \
        if isinstance(data.get("workload"), list) else []
    if op == "setting" and workloads:  # a real setting of the workload, with any value
        table = rng.choice(workloads)
        cls = REGISTRY.get(table.get("name", "sqlite-tpcb")) if isinstance(table.get("name", ""), str) else None
        keys = sorted(cls.setting_names()) if cls else SETTING_KEYS
        table[rng.choice(keys)] = random_value(rng) if rng.random() < 0.7 else rng.choice(HUGE + STRINGS)
    elif op == "drop" and places:
        container, key = rng.choice(places)
        del container[key]
    elif op == "type" and places:
        container, key = rng.choice(places)
        container[key] = random_value(rng)
    elif op == "range":
        numeric = [(c, k) for c, k in places if isinstance(c[k], (int, float)) and not isinstance(c[k], bool)]
        container, key = rng.choice(numeric) if numeric and rng.random() < 0.7 else rng.choice(places or [(data, "x")])
        container[key] = rng.choice(HUGE)
    elif op == "empty":
        strings = [(c, k) for c, k in places if isinstance(c[k], str)]
        container, key = rng.choice(strings or places or [(data, "baseline")])
        container[key] = ""
    elif op == "quote":
        strings = [(c, k) for c, k in places if isinstance(c, dict) and isinstance(c[k], str)]
        target = rng.choice([t for t in tables(data) if t is not data] or [data])
        if strings and rng.random() < 0.5:
            container, key = rng.choice(strings)
            container[key] = container[key] + rng.choice(["'", '"', " 'a b", "\\"])
        else:
            target[rng.choice(["mkfs", "mount", "command", "setup"])] = rng.choice(["-L 'a b", '-O "x', "a'b", "\\"])
    elif op == "unknown":
        target = rng.choice(tables(data))
        target[rng.choice(UNKNOWN_KEYS)] = random_value(rng)
    else:  # a known key where it may not belong, with any value
        target = rng.choice(tables(data))
        target[rng.choice(SETTING_KEYS + TOP_KEYS)] = random_value(rng)
    return data


def text_mutation(text: str, rng: random.Random) -> str:
    """Mutations only the file's text can carry."""
    op = rng.choice(["nested", "truncate", "quote", "garbage"])
    if op == "nested":
        depth = rng.choice([50, 500, 3000])
        return f"fs = {'[' * depth}{']' * depth}\n" + text
    if op == "truncate":
        return text[: rng.randint(0, len(text))]
    if op == "quote":
        return text.replace('= "', "= '\"", 1)
    return text + rng.choice(["\n[method\n", "\nruns = = 3\n", "\n\x00\n", "\n[[config]]\npreset = ext4\n"])


def mutants(n: int) -> list[tuple[str, str]]:
    rng = random.Random(SEED)
    sources = [(p.name, p.read_text()) for p in EXAMPLES]
    out = []
    for i in range(n):
        name, text = rng.choice(sources)
        if rng.random() < 0.12:
            out.append((f"{i}:{name}:text", text_mutation(text, rng)))
            continue
        data = copy.deepcopy(tomllib.loads(text))
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            data = mutate(data, rng)
        out.append((f"{i}:{name}", to_toml(data)))
    return out


def dry_run(path: Path, workdir: Path, capsys) -> tuple[int, str]:
    try:
        main(["run", "--dry-run", "--plan", str(path), "--workdir", str(workdir),
              "--results", str(workdir.parent / "fuzz-results.db")])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, capsys.readouterr().err


def test_at_least_500_mutants_only_exit_0_or_2(tmp_path, capsys):
    assert EXAMPLES, "no shipped examples to derive plans from"
    workdir = tmp_path / "wd"
    started = time.monotonic()
    outcomes = {0: 0, 2: 0}
    failures = []
    for name, text in mutants(MUTANTS):
        path = tmp_path / "mutant.toml"
        path.write_text(text)
        code, err = dry_run(path, workdir, capsys)
        bad = code not in (0, 2) or "internal error" in err or "Traceback" in err
        if code == 2:
            lines = [line for line in err.splitlines() if line.strip()]
            bad = bad or len(lines) != 1 or not lines[0].startswith("error:")
        if bad:
            failures.append(f"{name}: exit {code}: {err.strip()[:300]}\n---\n{text[:400]}")
        else:
            outcomes[code] += 1
    assert not failures, f"{len(failures)} mutants failed; first ones:\n" + "\n\n".join(failures[:5])
    assert outcomes[0] + outcomes[2] >= 500
    assert outcomes[2] > 100 and outcomes[0] > 10  # both kinds were produced: the mutations bite, not all refused
    assert not workdir.exists() and not (tmp_path / "fuzz-results.db").exists()  # a dry run creates nothing
    assert time.monotonic() - started < 60


def test_the_writer_round_trips_every_example():
    for path in EXAMPLES:
        data = tomllib.loads(path.read_text())
        assert tomllib.loads(to_toml(data)) == data, path.name


@pytest.mark.parametrize("flags", [
    ["--fs", ""], ["--size", ""], ["--size", "99999999T"], ["--size", "-1G"], ["--runs", "0"],
    ["--runs", "99999999999"], ["--blocks", "-3"], ["--rounds", "0"], ["--slice", "0s"], ["--slice", "nan"],
    ["--max-time", "inf"], ["--target-ci", "150%"], ["--target-ci", ""], ["--duration", "-5s"],
    ["--duration", "1e999s"], ["--seed", "-1"], ["--set", "scale=[1, [2]]"], ["--set", "synchronous={a=1}"],
    ["--set", "scale=nan"], ["--set", "duration=inf"], ["--workload", ""], ["--dir", ""], ["--device", ""],
    ["--baseline", ""], ["--workdir", "relative/dir"], ["--workdir", ""], ["--fs", "'"],
    ["--workload", "tree", "--set", "seed=abc"], ["--workload", "pgbench", "--set", "log_sampling=abc"],
    ["--workload", "command", "--set", "command=5"], ["--workload", "wal", "--set", "methods=[[1]]"],
    ["--workload", "command", "--set", "command='x'", "--set", "run_as='a\\u0000b'"],
])
def test_bad_flags_exit_2_in_one_line(tmp_path, capsys, flags):
    workdir = tmp_path / "wd"
    try:
        main(["run", "--dry-run", "--workdir", str(workdir), *flags] if "--workdir" not in flags
             else ["run", "--dry-run", *flags])
        code = 0
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.startswith("error:") and len(err.splitlines()) == 1 and "internal error" not in err
    assert not workdir.exists()
