"""Plans: TOML or CLI flags -> a validated Plan; the one-variable-at-a-time check."""

from __future__ import annotations

import math
import os
import re
import shlex
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

from pickfs.errors import PlanError, UntrustedPath
from pickfs.model import SCHEDULERS, FsConfig, Method, Plan, Target, WorkloadSpec
from pickfs.safepaths import check_own_dir, read_small, resolve
from pickfs.stack.filesystems import KNOWN, RAW, which
from pickfs.stack.presets import PRESETS, RAW_CONFIG
from pickfs.stack.workdir import path_problem, workdir_problem
from pickfs.units import MAX_SIZE, has_control, parse_size
from pickfs.workloads import DEFAULT_WORKLOAD, workload_class

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
MAX_PLAN = 1024**2  # bytes: a plan is a page of TOML
_TOP_KEYS = {"target", "method", "config", "workload", "fs", "baseline", "memory", "scale", "clients"}


def _options(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        texts = [value] if isinstance(value, str) else value
        if any(has_control(v) for v in texts):
            raise PlanError(f"{what} options hold a control character (a newline, a NUL, ...)",
                            f"write them on one line of plain characters, e.g. {what} = \"{_EXAMPLE[what]}\"")
    if isinstance(value, str):
        if what == "mkfs":
            try:
                return tuple(shlex.split(value))
            except ValueError as exc:  # an unbalanced quote, a trailing backslash
                raise PlanError(f"mkfs options {value!r} cannot be split into arguments ({exc})",
                                "balance the quotes, or give a list: mkfs = [\"-L\", \"my label\"]") from None
        return tuple(o for o in value.split(",") if o)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if what == "mount":
            return tuple(o for v in value for o in v.split(",") if o)
        return tuple(value)
    raise PlanError(f"{what} options must be a string or a list of strings", f'e.g. {what} = ["{_EXAMPLE[what]}"]')


_EXAMPLE = {"mkfs": "-b 4096", "mount": "noatime"}


def _kind(value: Any) -> str:
    """What a TOML value is, in the words of an error message."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


def _text(value: Any, where: str, example: str, empty: bool = False) -> str:
    """A string value of the plan: a string, one line, not empty (unless `empty`)."""
    if not isinstance(value, str):
        raise PlanError(f"{where} must be a string, not {_kind(value)}", f"e.g. {example}")
    if not value and not empty:
        raise PlanError(f"{where} is empty", f"e.g. {example}")
    if has_control(value):
        raise PlanError(f"{where} holds a control character (a newline, a NUL, ...)", f"e.g. {example}")
    return value


def _table(value: Any, where: str, example: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PlanError(f"{where} must be a table, not {_kind(value)}", f"e.g. {example}")
    return value


def _tables(value: Any, where: str, example: str) -> list[dict[str, Any]]:
    """An array of tables ([[config]], [[workload]])."""
    if not isinstance(value, list):
        raise PlanError(f"{where} must be an array of tables ([[{where}]]), not {_kind(value)}", f"e.g. {example}")
    for i, v in enumerate(value):
        if not isinstance(v, dict):
            raise PlanError(f"{where} #{i + 1} must be a table ([[{where}]]), not {_kind(v)}", f"e.g. {example}")
    return value


def check_setting_types(cls: Any, settings: dict[str, Any], where: str) -> None:
    """Each workload setting of the shape its default has: one value (a string, a number or true/false),
    a list of such values where the default is a list, a table of them where it is a table. Finite numbers."""
    for key, value in settings.items():
        default = cls.defaults.get(key)

        def scalar(v: Any, key: str = key) -> bool:
            if isinstance(v, float) and not math.isfinite(v):
                raise PlanError(f"{where} {key} is {v}, not a finite number", f"e.g. {key} = {_default_text(cls, key)}")
            return isinstance(v, (str, int, float))

        if isinstance(default, dict):
            ok = isinstance(value, dict) and all(scalar(v) for v in value.values())
            shape = "a table of values"
        elif isinstance(default, list) or key in cls.list_settings:
            ok = scalar(value) or (isinstance(value, list) and all(scalar(v) for v in value))
            shape = "a value or a list of values"
        else:
            ok = scalar(value)
            shape = "a string, a number or true/false"
        if not ok:
            raise PlanError(f"{where} {key} must be {shape}, not {_kind(value)}",
                            f"e.g. {key} = {_default_text(cls, key)}")


def _default_text(cls: Any, key: str) -> str:
    default = cls.defaults.get(key)
    if isinstance(default, str):
        return f'"{default}"' if default else '"..."'
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, (int, float)):
        return str(default)
    if isinstance(default, list):
        return "[" + ", ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in default) + "]"
    if isinstance(default, dict):
        return '{ NAME = "value" }'
    return '"..."'


def configs_from_names(text: str) -> list[FsConfig]:
    """The configurations a comma-separated list names ('all': every preset), each once, in order."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    expanded = [p for n in names for p in (list(PRESETS) if n == "all" else [n])]
    return [resolve_fs_name(n) for n in dict.fromkeys(expanded)]


def resolve_fs_name(name: str) -> FsConfig:
    """A preset, or a bare filesystem type the user names (jfs, f2fs, ...)."""
    name = _text(name, "a filesystem or preset name", '"ext4"')
    if name in PRESETS:
        return PRESETS[name]
    if name == RAW:
        return RAW_CONFIG
    if name in KNOWN or (_NAME.match(name) and which(f"mkfs.{name}")):
        return FsConfig(name, name, description=f"{name} with default options")
    raise PlanError(f"unknown preset or filesystem {name!r}",
                    f"presets: {', '.join(PRESETS)}; or a filesystem type with a mkfs.<type> tool")


def config_from_table(t: dict[str, Any], index: int) -> FsConfig:
    allowed = {"preset", "name", "fs", "mkfs", "mount", "scheduler", "base", "path", "description", "age",
               "age_rounds", "age_seed"}
    unknown = sorted(set(t) - allowed)
    if unknown:
        raise PlanError(f"[[config]] #{index + 1} has unknown key(s) {', '.join(unknown)}",
                        f"valid keys: {', '.join(sorted(allowed))}")
    where = f"[[config]] #{index + 1}"
    examples = {"preset": '"ext4"', "name": '"ext4-noatime"', "fs": '"ext4"', "scheduler": '"mq-deadline"',
                "base": '"ext4"', "path": '"/mnt/a"', "description": '"ext4 without atime updates"'}
    for key, example in examples.items():
        if key in t:
            _text(t[key], f"{where} {key}", f"{key} = {example}", empty=key == "description")
    if "fs" in t and not _NAME.match(t["fs"]):
        raise PlanError(f"{where} fs {t['fs']!r} is not a filesystem type", 'e.g. fs = "ext4" (letters, digits, - _ . +)')
    if "path" in t and not os.path.isabs(t["path"]):
        raise PlanError(f"{where} path {t['path']!r} is not an absolute path", 'e.g. path = "/mnt/a"')
    start = resolve_fs_name(t["preset"]) if "preset" in t else None
    fstype = t.get("fs") or (start.fstype if start else None)
    if not fstype and not t.get("path"):
        raise PlanError(f"[[config]] #{index + 1} names no filesystem", 'add fs = "ext4" or preset = "ext4"')
    name = t.get("name") or (start.name if start else fstype or Path(t["path"]).name)
    cfg = FsConfig(
        name=str(name),
        fstype=str(fstype or "existing"),
        mkfs_options=_options(t["mkfs"], "mkfs") if "mkfs" in t else (start.mkfs_options if start else ()),
        mount_options=_options(t["mount"], "mount") if "mount" in t else (start.mount_options if start else ()),
        scheduler=t.get("scheduler", start.scheduler if start else None),
        base=t.get("base", start.base if start else None),
        path=t.get("path"),
        description=t.get("description", start.description if start else ""),
    )
    if "age" in t:
        cfg = replace(cfg, **aging_fields(t, where))
    return cfg


# -- production conditions: aged filesystems, the user's memory, data sized to it (issue 13) --------------------
AGE_MAX = 0.8  # the most of a filesystem an aging may fill: the workload's data needs the rest


def parse_share(value: Any, what: str, example: str) -> float:
    """A share given as 0.7 or "70%" (pure)."""
    text = str(value).strip() if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""
    try:
        share = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise PlanError(f"{what} {value!r} is not a share", f"e.g. {example}") from None
    if not math.isfinite(share):
        raise PlanError(f"{what} {value!r} is not a share", f"e.g. {example}")
    return share


def aging_fields(t: dict[str, Any], where: str) -> dict[str, Any]:
    """A [[config]]'s aging keys, checked: age = "70%", age_rounds = 3, age_seed = 1."""
    age = parse_share(t["age"], f"{where} age", 'age = "70%"')
    if not 0.05 <= age <= AGE_MAX:
        raise PlanError(f"{where} age {t['age']!r} is out of range", f'age = "5%" to "{AGE_MAX:.0%}" of the filesystem')
    out: dict[str, Any] = {"age": age}
    for key, low, high in (("age_rounds", 1, 50), ("age_seed", 0, 2**63 - 1)):
        if key in t:
            v = t[key]
            if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
                raise PlanError(f"{where} {key} must be a whole number from {low} to {high}", f"e.g. {key} = 3")
            out[key] = v
    return out


def parse_memory(value: Any) -> int:
    """The memory of the production box: at least 64 MiB."""
    size = parse_size(value)
    if size < 64 * 1024**2:
        raise PlanError(f"memory {value!r} is too small for a database server", 'e.g. memory = "1G" (at least 64M)')
    return size


def parse_scale(value: Any) -> float:
    """How many times the memory the workloads' data should be: 2, 2.5 or "2x"."""
    text = str(value).strip().lower().rstrip("x") if isinstance(value, (str, int, float)) \
        and not isinstance(value, bool) else ""
    try:
        scale = float(text)
    except ValueError:
        raise PlanError(f"scale {value!r} is not a multiple of the memory", 'e.g. scale = 2 (data twice the memory)') \
            from None
    if not math.isfinite(scale) or not 0.1 <= scale <= 100:
        raise PlanError(f"scale {value!r} is out of range", "a multiple of the memory from 0.1 to 100, e.g. scale = 2")
    return scale


def parse_clients(value: Any) -> tuple[int, ...]:
    """The client counts of the concurrency dimension: [1, 2, 4, 8] or "1,2,4,8"."""
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else [value]
    counts = []
    for item in items:
        text = str(item).strip()
        if isinstance(item, bool) or not text.isdigit() or not 1 <= int(text) <= 1024:
            raise PlanError(f"clients {value!r} is not a list of client counts", "e.g. clients = [1, 2, 4, 8]")
        counts.append(int(text))
    if not counts:
        raise PlanError("clients is empty", "e.g. clients = [1, 2, 4, 8]")
    return tuple(dict.fromkeys(counts))


def expand_clients(workloads: list[WorkloadSpec], counts: tuple[int, ...]) -> tuple[list[WorkloadSpec], list[str]]:
    """Every server workload once per client count, labelled LABEL-cN; the others as they are, with a warning."""
    out, warnings = [], []
    for w in workloads:
        cls = workload_class(w.name)
        key = cls.clients_setting
        if key is None:
            warnings.append(f"clients does not apply to {w.label}: it has no client count")
            out.append(w)
            continue
        for n in counts:
            settings = {**dict(w.settings), key: n}
            if "threads" in settings and key == "clients" and isinstance(settings["threads"], int):
                settings["threads"] = min(settings["threads"], n)  # pgbench: no more threads than clients
            out.append(WorkloadSpec(w.name, f"{w.label}-c{n}", tuple(sorted(cls.check(settings).items()))))
    return out, warnings


def budget_shares(workloads: list[WorkloadSpec] | tuple[WorkloadSpec, ...]) -> dict[str, float]:
    """Each workload's share of its time budget (pure): the client counts one workload was expanded into
    (LABEL-c1, LABEL-c2, ...) share that workload's budget; any other workload has it whole."""
    groups: dict[tuple[str, str], list[str]] = {}
    for w in workloads:
        key = workload_class(w.name).clients_setting
        count = dict(w.settings).get(key) if key else None
        base = w.label.removesuffix(f"-c{count}") if count is not None else w.label
        groups.setdefault((w.name, base), []).append(w.label)
    return {label: 1.0 / len(labels) for labels in groups.values() for label in labels}


def sized_image(need: int, age: float | None, minimum: int) -> int:
    """The image size that holds `need` bytes of data beside an aging's fill (pure): whole GiB, at least `minimum`."""
    usable = IMAGE_USABLE_SHARE - (age or 0.0)
    gib = 1024**3
    return max(minimum, -(-int(need / usable) // gib) * gib)


def scaled_workloads(workloads: list[WorkloadSpec], data_bytes: int) -> tuple[list[WorkloadSpec], list[str]]:
    """Each workload with its data grown to about `data_bytes`; a warning for each that has no data to grow."""
    out, warnings = [], []
    for w in workloads:
        grown = workload_class(w.name).scaled(w, data_bytes)
        if grown is None:
            warnings.append(f"scale does not apply to {w.label}: it has no data-size setting")
            out.append(w)
        else:
            out.append(WorkloadSpec(w.name, w.label, tuple(sorted(grown.items()))))
    return out, warnings


def workload_from_table(t: dict[str, Any], index: int) -> WorkloadSpec:
    t = dict(t)
    where = f"[[workload]] #{index + 1}"
    name = _text(t.pop("name", DEFAULT_WORKLOAD), f"{where} name", f'name = "{DEFAULT_WORKLOAD}"')
    cls = workload_class(name)
    label = _text(t.pop("label", name), f"{where} label", 'label = "wal-normal"')
    check_setting_types(cls, t, f"workload {label}:")
    settings = cls.normalize(t)
    return WorkloadSpec(name=name, label=str(label), settings=tuple(sorted(settings.items())))


def setting_differences(a: FsConfig, b: FsConfig) -> list[str]:
    """Settings in which two configurations differ (fstype, each mkfs flag, each mount option, scheduler)."""
    diffs = []
    if a.fstype != b.fstype:
        diffs.append(f"filesystem {b.fstype} -> {a.fstype}")

    def mkfs_groups(opts: tuple[str, ...]) -> dict[str, str]:
        groups: dict[str, str] = {}
        key = None
        for tok in opts:
            if tok.startswith("-"):
                key = tok
                groups[key] = ""
            elif key is not None:
                groups[key] = (groups[key] + " " + tok).strip()
                key = None
            else:
                groups[tok] = tok
        return groups

    ga, gb = mkfs_groups(a.mkfs_options), mkfs_groups(b.mkfs_options)
    for k in sorted(set(ga) | set(gb)):
        if ga.get(k) != gb.get(k):
            diffs.append(f"mkfs {k} {gb.get(k, '(unset)')} -> {ga.get(k, '(unset)')}")
    ma = {o.split("=", 1)[0]: o for o in a.mount_options}
    mb = {o.split("=", 1)[0]: o for o in b.mount_options}
    for k in sorted(set(ma) | set(mb)):
        if ma.get(k) != mb.get(k):
            diffs.append(f"mount {mb.get(k, '(unset)')} -> {ma.get(k, '(unset)')}")
    if a.scheduler != b.scheduler:
        diffs.append(f"scheduler {b.scheduler or '(default)'} -> {a.scheduler or '(default)'}")
    if (a.age, a.age_rounds, a.age_seed) != (b.age, b.age_rounds, b.age_seed):
        diffs.append(f"aged {_aged(b)} -> {_aged(a)}")
    return diffs


def _aged(c: FsConfig) -> str:
    return f"{c.age:.0%} ({c.age_rounds} rounds, seed {c.age_seed})" if c.age else "fresh"


def one_variable_warnings(configs: tuple[FsConfig, ...]) -> list[str]:
    by_name = {c.name: c for c in configs}
    warnings = []
    for c in configs:
        if not c.base:
            continue
        base = by_name.get(c.base) or PRESETS.get(c.base)
        if base is None:
            warnings.append(f"{c.name}: base {c.base!r} is not in this plan nor a preset; nothing to compare")
            continue
        diffs = setting_differences(c, base)
        if len(diffs) > 1:
            warnings.append(f"{c.name} differs from its base {base.name} in {len(diffs)} settings "
                            f"({'; '.join(diffs)}): a difference in results cannot be pinned on one of them")
    return warnings


IMAGE_USABLE_SHARE = 0.85  # of an image, what is left for data after the filesystem's own metadata


def _check_names(configs: list[FsConfig], workloads: list[WorkloadSpec]) -> list[str]:
    """Something to build and run, each named once; the configurations' names."""
    if not configs:
        raise PlanError("the plan has no configuration", "add --fs ext4,xfs or [[config]] tables")
    if not workloads:
        raise PlanError("the plan has no workload", f"add --workload {DEFAULT_WORKLOAD}")
    names = [c.name for c in configs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise PlanError(f"configuration name(s) used twice: {', '.join(dupes)}", 'give each a distinct name = "..."')
    labels = [w.label for w in workloads]
    if len(set(labels)) != len(labels):
        raise PlanError("two workloads share a label", 'give each [[workload]] a distinct label = "..."')
    return names


def _check_config(c: FsConfig, target: Target) -> None:
    """One configuration: a valid name, a known scheduler, and what its target can build."""
    if not _NAME.match(c.name):
        raise PlanError(f"configuration name {c.name!r} is not valid", "use letters, digits, - _ . +")
    if c.scheduler is not None and c.scheduler not in SCHEDULERS:
        raise PlanError(f"{c.name}: unknown I/O scheduler {c.scheduler!r}", f"use one of {', '.join(SCHEDULERS)}")
    if c.fstype == RAW and (c.mkfs_options or c.mount_options):
        raise PlanError(f"{c.name}: the raw device has no filesystem to give mkfs or mount options",
                        "drop mkfs and mount from this configuration")
    if c.fstype == RAW and target.kind == "directory":
        raise PlanError(f"{c.name}: a raw device needs an image or device target",
                        "use --target image (the default) or --target device for the raw baseline")
    if target.kind == "directory" and not c.path:
        raise PlanError(f"{c.name}: a directory target needs a path per configuration",
                        "use --dir PATH (repeatable) or path = \"/mnt/x\" in [[config]]")
    if target.kind == "directory" and isinstance(c.path, str):
        try:  # pickfs makes its data directory in it: no other user's link on the way
            resolve(c.path, f"{c.name}: directory")
        except UntrustedPath as exc:
            raise PlanError(exc.message, "name the directory itself, with no other user's link on the way") from None


def _check_crash_method(method: Method, target: Target) -> None:
    """The crash test's settings: states, duration, the unit and the strategies."""
    if method.crash_states < 0 or (not method.speed and method.crash_states < 1):
        raise PlanError("crash_states must be a positive number of power-cut states", "e.g. --states 12")
    if method.crash_keep:
        keep = Path(method.crash_keep)
        from pickfs.crash.runner import kept_images_only

        problem = check_own_dir(keep, "crash_keep", made=kept_images_only)
        if problem:
            raise PlanError(problem, "name a new or empty directory of your own (it is made if missing)")
        if not Path(os.path.abspath(keep)).parent.is_dir():
            raise PlanError(f"crash_keep {keep}: its parent directory does not exist", "make it first, or name another")
    if not method.crash_states:
        return
    if method.crash_duration <= 0:
        raise PlanError("crash_duration must be positive", "e.g. crash_duration = 3.0")
    from pickfs.crash.states import STRATEGIES, parse_strategies

    if method.crash_unit & (method.crash_unit - 1):
        raise PlanError(f"crash_unit = {method.crash_unit} is not a power of two", "e.g. crash_unit = 4096")
    try:
        parse_strategies(method.crash_strategies)
    except ValueError as exc:
        raise PlanError(f"crash_strategies: {exc}", f"use some of: {', '.join(STRATEGIES)}") from None
    if target.kind == "directory":
        raise PlanError("a crash test builds its own filesystems; it cannot use existing directories",
                        "use an image target (the default) for crash tests")
def _check_method_ranges(method: Method) -> None:
    """Counts, lengths and shares of the method within their ranges."""
    if method.runs < 1:
        raise PlanError("runs must be at least 1", "e.g. --runs 5")
    if method.warmup < 0:
        raise PlanError("warmup cannot be negative", "e.g. --warmup 1")
    if method.blocks is not None and method.blocks < 1:
        raise PlanError("blocks must be at least 1", "e.g. --blocks 3")
    if method.rounds is not None and method.rounds < 1:
        raise PlanError("rounds must be at least 1", "e.g. --rounds 5")
    if method.slice_seconds is not None and not 0.1 <= method.slice_seconds <= 3600:
        raise PlanError(f"slice length {method.slice_seconds} s is out of range", "e.g. --slice 1s (0.1 s to 1 h)")
    if method.max_seconds is not None and method.max_seconds <= 0:
        raise PlanError("the time budget must be positive", "e.g. --max-time 8m")
    if method.latency_target is not None:  # the capacity search (engine/capacity.py)
        from pickfs.stats.capacity import parse_target

        try:
            parse_target(method.latency_target)
        except ValueError as exc:
            raise PlanError(f"latency_target {exc}", 'e.g. latency_target = "p99<=5ms" (or --latency-target)') from None
    if method.target_ci is not None and not 0 < method.target_ci < 1:
        raise PlanError("target_ci must be a share between 0 and 1", "e.g. target_ci = 0.05 (or --target-ci 5%)")
    if method.target_ci is not None and method.max_runs < method.runs:
        raise PlanError(f"max_runs {method.max_runs} is below runs {method.runs}", "raise --max-runs or lower --runs")


MAX_DATA_BYTES = 1024**5  # 1 PiB: more than any image or spare device pickfs would build


def _largest_need(configs: list[FsConfig], workloads: list[WorkloadSpec]) -> tuple[str, int, float]:
    """The workload that needs the most room on the filesystem: (its label, the bytes, the aging's share)."""
    age = max((c.age or 0.0 for c in configs), default=0.0)
    needs = {w.label: workload_class(w.name).space_needed(w) or 0 for w in workloads}
    label, need = max(needs.items(), key=lambda kv: kv[1])
    if need > MAX_DATA_BYTES:
        raise PlanError(f"{label} needs more than {MAX_DATA_BYTES // 1024**5} PiB on the filesystem",
                        "use smaller settings (scale, sizes, file counts)")
    return label, need, age


def _bytes(n: int) -> str:
    """A size in a refusal: MiB below 1 GiB, else GiB (pure)."""
    return f"{n / 1024**2:,.0f} MiB" if n < 1024**3 else f"{n / 1024**3:,.1f} GiB"


# The crash test's image lives under the recorder: every write is logged, and each state is rebuilt on a
# copy of the image, so it is kept small: sized to the job between these two.
CRASH_IMAGE_MIN = 512 * 1024**2
CRASH_IMAGE_MAX = 4 * 1024**3


def _sized_crash(method: Method, configs: list[FsConfig], workloads: list[WorkloadSpec]) -> tuple[Method, list[str]]:
    """The crash test's image sized to the job when no crash size was given (within the recorder's limits);
    a given size checked against the largest need. With a note when the job's data would not fit."""
    if not method.crash_states:
        return method, []
    label, need, age = _largest_need(configs, workloads)
    usable = IMAGE_USABLE_SHARE - age
    if method.crash_size_auto:
        size = sized_image(need, age, max(method.crash_size, CRASH_IMAGE_MIN)) if need > usable * method.crash_size \
            else method.crash_size
        if size <= max(CRASH_IMAGE_MAX, method.crash_size):
            return replace(method, crash_size=size), []
        note = (f"{label} needs about {need / 1024**3:.1f} GiB on the filesystem, more than the crash test's image "
                f"of at most {CRASH_IMAGE_MAX // 1024**3} GiB holds (the recorder logs every write); the crash test "
                "commits to a small table of its own, but a server that fills its disk fails: give the crash test "
                "smaller settings if it does")
        return replace(method, crash_size=CRASH_IMAGE_MAX), [note]
    if need > usable * method.crash_size:
        gib = sized_image(need, age, 0) // 1024**3
        raise PlanError(f"{label} needs about {_bytes(need)} on the filesystem; the crash test's image of "
                        f"{_bytes(method.crash_size)} leaves about {_bytes(int(usable * method.crash_size))} for data",
                        f"use --size {gib}G with pickfs crashtest (crash_size = {gib * 1024**3} under [method]), "
                        "or leave the size out to have it sized to the job")
    return method, []


def _sized_target(target: Target, configs: list[FsConfig], workloads: list[WorkloadSpec]) -> Target:
    """An image sized to the job when no size was given; a given size checked against the largest need."""
    if target.kind != "image":
        return target
    label, need, age = _largest_need(configs, workloads)
    if target.size_auto:  # sized to the job: the sparse image only takes what is written to it
        return replace(target, size_bytes=sized_image(need, age, target.size_bytes))
    if need and need > (IMAGE_USABLE_SHARE - age) * target.size_bytes:
        gib = sized_image(need, age, 0) // 1024**3
        aged = f" beside the aging's {age:.0%}" if age else ""
        raise PlanError(f"{label} needs about {_bytes(need)} on the filesystem{aged}; the image of "
                        f"{_bytes(target.size_bytes)} leaves about "
                        f"{_bytes(int((IMAGE_USABLE_SHARE - age) * target.size_bytes))} for data",
                        f"use --size {gib}G (or size = \"{gib}G\" under [target]), leave the size out to have "
                        "it sized to the job, or smaller settings")
    return target


def check_stored_plan(plan: Plan) -> None:
    """A plan read back from a results file (`run --resume`) checked as a new one would be: its workloads and
    settings (each value of its setting's shape), its configurations, target and method. PlanError otherwise."""
    for w in plan.workloads:
        if not isinstance(w.name, str):
            raise PlanError(f"the stored plan names a workload {w.name!r}", "start a new run instead")
        workload_class(w.name).normalize(dict(w.settings))
    build_plan(plan.target, list(plan.configs), list(plan.workloads), plan.method, plan.baseline)


def build_plan(target: Target, configs: list[FsConfig], workloads: list[WorkloadSpec], method: Method,
               baseline: str | None) -> Plan:
    """The one place a plan is built and checked, whether it came from flags or a file."""
    names = _check_names(configs, workloads)
    for c in configs:
        _check_config(c, target)
    _check_target(target)
    _check_method_ranges(method)
    _check_crash_method(method, target)
    check_method(method)
    if baseline is not None and baseline not in names:
        raise PlanError(f"baseline {baseline!r} is not a configuration of this plan", f"use one of {', '.join(names)}")
    if target.kind == "device" and not target.device:
        raise PlanError("a device target needs a device", "add --device /dev/sdX")
    if target.kind == "image" and target.size_bytes < 64 * 1024**2:
        raise PlanError(f"image size {target.size_bytes} bytes is too small", "use at least --size 64M (xfs needs 300M)")
    notes: list[str] = []
    if target.scale is not None:
        if target.memory_bytes is None:
            raise PlanError("scale grows the data to a multiple of the memory, and no memory is set",
                            'add memory = "1G" (or --memory 1G), or drop scale')
        workloads, scale_warnings = scaled_workloads(workloads, int(target.scale * target.memory_bytes))
        notes += scale_warnings
    if method.speed:  # a crash test alone builds no speed images
        target = _sized_target(target, configs, workloads)
    method, crash_notes = _sized_crash(method, configs, workloads)
    warnings = [*one_variable_warnings(tuple(configs)), *notes, *crash_notes]
    # truth: which queue a scheduler setting changes on an image (issue 19.3)
    if target.kind == "image" and any(c.scheduler for c in configs):
        warnings.append(SCHEDULER_ON_IMAGES)
    return Plan(target=target, configs=tuple(configs), workloads=tuple(workloads), method=method,
                baseline=baseline, warnings=tuple(warnings))


SCHEDULER_ON_IMAGES = ("on images the scheduler setting changes only each loop device's queue; the host disk's own "
                       "scheduler still orders the real I/O: to compare schedulers use a device target (--device)")


def _method_from_table(t: dict[str, Any]) -> Method:
    allowed = {f for f in Method.__dataclass_fields__} - {"crash_size_auto"}
    unknown = sorted(set(t) - allowed)
    if unknown:
        raise PlanError(f"[method] has unknown key(s) {', '.join(unknown)}", f"valid keys: {', '.join(sorted(allowed))}")
    for key, value in t.items():
        check_method_value(key, value)
    if "runs" in t and "rounds" not in t:  # side by side, a plan's "3 runs" is 3 rounds (as --runs)
        t = {**t, "rounds": t["runs"]}
    return Method(**t, crash_size_auto="crash_size" not in t)


_METHOD_OPTIONAL = {"target_ci": float, "max_seconds": float, "slice_seconds": float, "seed": int, "rounds": int,
                    "blocks": int, "baseline_copies": int, "latency_target": str}

# The range of every number in [method] (both ends included; None: no bound), and how to fix it.
METHOD_RANGES: dict[str, tuple[float | None, float | None, str]] = {
    "runs": (1, 1000, "runs = 5"),
    "warmup": (0, 100, "warmup = 1"),
    "quiesce_seconds": (0, 600, "quiesce_seconds = 1.0"),
    "quiesce_timeout": (0, 86400, "quiesce_timeout = 60.0"),
    "monitor_interval": (0.05, 3600, "monitor_interval = 1.0"),
    "target_ci": (None, None, "target_ci = 0.05"),  # (0, 1): checked in build_plan, with its own hint
    "max_runs": (1, 1000, "max_runs = 20"),
    "max_seconds": (None, 30 * 24 * 3600, "max_seconds = 540"),
    "crash_states": (0, 10000, "crash_states = 12"),
    "crash_duration": (None, 3600, "crash_duration = 3.0"),
    "crash_size": (64 * 1024**2, 1024**5, "crash_size = 536870912 (512 MiB)"),
    "crash_unit": (512, 1024**2, "crash_unit = 4096"),
    "crash_recovery": (0, 1, "crash_recovery = 0.25"),
    "blocks": (1, 100, "blocks = 3"),
    "rounds": (1, 10000, "rounds = 5"),
    "slice_seconds": (None, None, "slice_seconds = 1.0"),  # checked in build_plan, with its own hint
    "seed": (0, 2**63 - 1, "seed = 42"),
    "margin": (0, 0.5, "margin = 0.05"),
    "baseline_copies": (1, 12, "baseline_copies = 3"),
}


def check_method(method: Method) -> None:
    """Every field of the method of the right type, finite, and within its range."""
    for key in Method.__dataclass_fields__:
        value = getattr(method, key)
        if value is None and (key in _METHOD_OPTIONAL):
            continue
        check_method_value(key, value)
        if isinstance(value, float) and not math.isfinite(value):
            raise PlanError(f"[method] {key} must be a finite number, not {value}", f"e.g. {METHOD_RANGES[key][2]}")
        low, high, example = METHOD_RANGES.get(key, (None, None, ""))
        if low is not None and value < low or high is not None and value > high:
            span = f"from {low} to {high}" if low is not None and high is not None else \
                f"at least {low}" if low is not None else f"at most {high}"
            raise PlanError(f"[method] {key} = {value} is out of range: it must be {span}", f"e.g. {example}")


def check_method_value(key: str, value: Any) -> None:
    """One [method] value of the type its default has (None allowed where the default is None)."""
    default = Method.__dataclass_fields__[key].default
    want = _METHOD_OPTIONAL.get(key, type(default))
    ok = isinstance(value, want) and not (want is not bool and isinstance(value, bool))
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        example = {bool: "true", int: "3", float: "1.5"}.get(want, repr(default))
        raise PlanError(f"[method] {key} must be {'a whole number' if want is int else want.__name__}, "
                        f"not {value!r}", f"e.g. {key} = {example}")


def _target_from_table(t: dict[str, Any]) -> tuple[Target, list[str]]:
    allowed = {"kind", "workdir", "size", "device", "confirm", "paths"}
    unknown = sorted(set(t) - allowed)
    if unknown:
        raise PlanError(f"[target] has unknown key(s) {', '.join(unknown)}", f"valid keys: {', '.join(sorted(allowed))}")
    examples = {"kind": '"image"', "workdir": '"/var/tmp/pickfs"', "device": '"/dev/sdb"', "confirm": '"/dev/sdb"'}
    for key, example in examples.items():
        if key in t:
            _text(t[key], f"[target] {key}", f"{key} = {example}")
    if "size" in t and (isinstance(t["size"], bool) or not isinstance(t["size"], (str, int))):
        raise PlanError(f"[target] size must be a string or a whole number of bytes, not {_kind(t['size'])}",
                        'e.g. size = "4G"')
    paths = t.get("paths", [])
    if not isinstance(paths, list) or not all(isinstance(x, str) for x in paths):
        raise PlanError(f"[target] paths must be a list of directories, not {_kind(paths)}",
                        'e.g. paths = ["/srv/a", "/mnt/b"]')
    for x in paths:
        _text(x, "[target] paths entry", 'paths = ["/srv/a", "/mnt/b"]')
    kind = t.get("kind", "image")
    if kind not in ("image", "device", "directory"):
        raise PlanError(f"unknown target kind {kind!r}", "use image, device or directory")
    defaults = Target()
    target = Target(kind=kind, workdir=t.get("workdir", defaults.workdir),
                    size_bytes=parse_size(t.get("size", defaults.size_bytes)),
                    device=t.get("device"), confirm=t.get("confirm"), size_auto="size" not in t)
    return target, list(paths)


def _check_target(target: Target) -> None:
    """The target's own values: a work directory that is an absolute path of plain characters, a size in range."""
    if not isinstance(target.workdir, str) or path_problem(target.workdir):
        raise PlanError(f"work directory {target.workdir!r} is not an absolute path of plain characters",
                        "e.g. --workdir /var/tmp/pickfs (or workdir = \"/var/tmp/pickfs\" under [target])")
    problem = workdir_problem(target.workdir)
    if problem:
        raise PlanError(problem, "name a new or empty directory for pickfs (it is made if missing), "
                                 "e.g. --workdir /var/tmp/pickfs")
    if isinstance(target.size_bytes, bool) or not isinstance(target.size_bytes, int) \
            or not 0 <= target.size_bytes <= MAX_SIZE:
        raise PlanError(f"image size {target.size_bytes!r} is out of range", "e.g. --size 4G (at most 1P)")
    for what, value in (("device", target.device), ("confirm", target.confirm)):
        if value is not None:
            _text(value, f"the target's {what}", "--device /dev/sdb --confirm-device /dev/sdb")


def load_plan_file(path: Path, overrides: dict[str, Any] | None = None, workdir: str | None = None,
                   workdir_given: bool = False) -> Plan:
    """A plan from a TOML file. `workdir` (the --workdir option) applies unless the file's [target]
    names one; `workdir_given`: the user gave --workdir explicitly, and it wins over the file's."""
    try:
        text = read_small(path, MAX_PLAN, "plan file").decode("utf-8")
    except ValueError as exc:
        if isinstance(exc, UnicodeDecodeError):
            raise PlanError(f"plan file {path} is not UTF-8 text", "save it as UTF-8 TOML") from None
        raise PlanError(str(exc), "name the plan's .toml file itself") from None
    except FileNotFoundError:
        raise PlanError(f"plan file {path} not found", "check the path") from None
    except IsADirectoryError:
        raise PlanError(f"plan file {path} is a directory", "name a .toml file, e.g. examples/sqlite-durability.toml") \
            from None
    except OSError as exc:
        raise PlanError(f"plan file {path} cannot be read: {exc.strerror or exc}", "check the path and its permissions") \
            from None
    data = parse_plan_text(text, str(path))
    target_table = _table(data.get("target", {}), "[target]", 'size = "4G" under [target]')
    target, paths = _target_from_table(target_table)
    if workdir and (workdir_given or "workdir" not in target_table):
        target = replace(target, workdir=workdir)
    if "memory" in data:
        target = replace(target, memory_bytes=parse_memory(data["memory"]))
    if "scale" in data:
        target = replace(target, scale=parse_scale(data["scale"]))
    fs = data.get("fs", [])
    if not isinstance(fs, list) or not all(isinstance(n, str) for n in fs):
        raise PlanError(f"fs must be a list of presets or filesystem types, not {_kind(fs)}", 'e.g. fs = ["ext4", "xfs"]')
    configs = [resolve_fs_name(n) for n in fs]
    config_tables = _tables(data.get("config", []), "config", '[[config]] with preset = "ext4"')
    configs += [config_from_table(t, i) for i, t in enumerate(config_tables)]
    configs += [directory_config(p) for p in paths]
    workload_tables = _tables(data.get("workload", [{}]), "workload", '[[workload]] with name = "sqlite-tpcb"')
    workloads = [workload_from_table(t, i) for i, t in enumerate(workload_tables)]
    clients_warnings: list[str] = []
    if "clients" in data:
        workloads, clients_warnings = expand_clients(workloads, parse_clients(data["clients"]))
    method = _method_from_table(_table(data.get("method", {}), "[method]", "runs = 5 under [method]"))
    if overrides:
        method = replace(method, **{k: v for k, v in overrides.items() if v is not None})
    baseline = data.get("baseline")
    if baseline is not None:
        baseline = _text(baseline, "baseline", 'baseline = "ext4"')
    plan = build_plan(target, configs, workloads, method, baseline)
    return replace(plan, warnings=(*plan.warnings, *clients_warnings)) if clients_warnings else plan


def parse_plan_text(text: str, source: str = "the plan") -> dict[str, Any]:
    """The TOML of a plan, with its top-level keys checked."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"plan file {source} is not valid TOML: {exc}", "fix the line it names") from None
    except RecursionError:
        raise PlanError(f"plan file {source} nests arrays or tables too deeply to read",
                        "a plan needs no more than two levels: [[config]] tables of plain values") from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise PlanError(f"plan file has unknown key(s) {', '.join(unknown)}", f"valid keys: {', '.join(sorted(_TOP_KEYS))}")
    return data


def directory_config(path: str) -> FsConfig:
    p = Path(path)
    try:  # resolved following root's links only: one another user planted is refused, not followed
        real = resolve(path, "directory")
    except UntrustedPath as exc:
        raise PlanError(exc.message, "name the directory itself, with no other user's link on the way") from None
    if not real.is_dir():
        raise PlanError(f"directory {path} does not exist", "create it, or name an existing directory")
    label = re.sub(r"[^A-Za-z0-9_.+-]+", "-", str(real).strip("/")) or "root"
    return FsConfig(name=label, fstype="existing", path=str(real), description=f"existing directory {p}")
