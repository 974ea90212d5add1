"""The plan's keys, declared once: where each goes, its type, default, range or choices, unit and meaning.

The parser checks plans against these declarations (which keys a table accepts, each value's type and
range) and the plan-file reference, docs/plan.md, is generated from them (`python -m pickfs.plan.reference`),
so what the reference says and what a plan may hold are one table. Pure data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pickfs.crash.states import STRATEGIES
from pickfs.model import SCHEDULERS, FsConfig, Method, Target
from pickfs.stack.filesystems import RAW
from pickfs.stack.presets import PRESETS
from pickfs.stack.targets import KINDS
from pickfs.units import MAX_SIZE
from pickfs.workloads import DEFAULT_WORKLOAD, REGISTRY

MIB = 1024**2
GIB = 1024**3


@dataclass(frozen=True)
class Span:
    """An allowed range of numbers; an open end excludes its bound, None leaves that side unbounded."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def contains(self, value: float) -> bool:
        """Within the range (NaN never is)."""
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def words(self, show: Callable[[float], str] = str) -> str:
        """The range as an error message states it: 'from 1 to 1000', 'at least 0', 'at most 3600'
        (`show` writes each bound)."""
        lo = "" if self.low is None else show(self.low)
        hi = "" if self.high is None else show(self.high)
        low = f"more than {lo}" if self.low_open else f"at least {lo}"
        high = f"less than {hi}" if self.high_open else f"at most {hi}"
        if self.low is not None and self.high is not None:
            if self.low == self.high and not (self.low_open or self.high_open):
                return f"{lo} only"
            if not (self.low_open or self.high_open):
                return f"from {lo} to {hi}"
            return f"{low} and {high}"
        return low if self.low is not None else high


@dataclass(frozen=True)
class Key:
    """One key of a plan.

    `value_type` is the value's type in words; `python` the Python type [method] values must have (an int is a
    float there, true/false is never a number); `default` the value a plan gets without the key (None:
    unset, `default_text` then says what that means); `span` the range the parser enforces (`apart`: it
    is checked by its own rule, with its own message); `choices` the values it accepts (`several`: some of
    them at once)."""

    name: str
    value_type: str
    description: str
    default: Any = None
    default_text: str = ""
    span: Span | None = None
    apart: bool = False
    choices: tuple[str, ...] = ()
    unit: str = ""
    example: str = ""
    python: type | None = None
    several: bool = False  # several of the choices may be given (a list, or comma-separated)

    def shown_default(self) -> str:
        """The default as a plan would write it, or what leaving the key out means."""
        if self.default_text:
            return self.default_text
        return toml_text(self.default)


@dataclass(frozen=True)
class Section:
    """The keys of one part of a plan: `table` is where they are written ('' for the top level,
    'target' for [target], 'config' for [[config]] tables, ...)."""

    title: str
    table: str
    keys: tuple[Key, ...]
    intro: str = ""
    array: bool = False

    def names(self) -> set[str]:
        return {k.name for k in self.keys}

    def key(self, name: str) -> Key:
        return next(k for k in self.keys if k.name == name)

    @property
    def header(self) -> str:
        if not self.table:
            return "top level"
        return f"[[{self.table}]]" if self.array else f"[{self.table}]"


def toml_text(value: Any) -> str:
    """A value as TOML writes it (pure); an empty text for None."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_text(v)}" for k, v in value.items()) + " }" if value else "{}"
    return str(value)


_PRESET_NAMES = ", ".join(PRESETS)

# -- top level ------------------------------------------------------------------------------------------------
TOP = Section("Top level", "", (
    Key("fs", "list of strings", "presets or filesystem types to compare, each a configuration with its "
        f"default options (a type needs its mkfs.TYPE tool; {RAW}: the bare device); presets: {_PRESET_NAMES}", default=[], example='fs = ["ext4", "xfs"]'),
    Key("baseline", "string", "the configuration every other one is compared with", default=None,
        default_text="the first configuration", example='baseline = "ext4"'),
), intro="Plain keys at the top of the file, before any table.")

PRODUCTION = Section("Production conditions", "", (
    Key("memory", "size", "the production box's memory: each configuration's server and client run in a "
        "memory cgroup of this size, so the page cache is no larger than there", default=None,
        default_text="unlimited", span=Span(64 * MIB, MAX_SIZE), unit="bytes", example='memory = "1G"'),
    Key("scale", "number", "grow every workload's data to this multiple of `memory` (needs memory); "
        'written 2, 2.5 or "2x"', default=None, default_text="the workloads' own sizes", span=Span(0.1, 100),
        unit="times memory", example="scale = 2"),
    Key("clients", "list of whole numbers", "run every workload that has a client count once per count, "
        'labelled LABEL-cN; a list or "1,2,4,8"', default=None, default_text="each workload's own",
        span=Span(1, 1024), example="clients = [1, 2, 4, 8]"),
), intro="Top-level keys that make the test machine behave like the production box.")

TABLES = ("target", "method", "config", "workload")  # the tables a plan may hold, besides plain keys

# -- [target] -------------------------------------------------------------------------------------------------
_TARGET = Target()
TARGET_KINDS = tuple(KINDS)
TARGET = Section("Target", "target", (
    Key("kind", "string", "what the configurations are built on: a sparse image file on a loop device, a spare "
        "block device (erased), or existing directories (nothing built)", default=_TARGET.kind,
        choices=TARGET_KINDS, example='kind = "image"'),
    Key("workdir", "string", "pickfs's work directory: images, the ledger, scratch data (an absolute path; "
        "made if missing)", default=_TARGET.workdir, example='workdir = "/var/tmp/pickfs"'),
    Key("size", "size", 'each image\'s size: "4G" or a whole number of bytes; the images are sparse',
        default=None, default_text=f"sized to the job, at least {_TARGET.size_bytes // GIB}G",
        span=Span(64 * MIB, MAX_SIZE), unit="bytes", example='size = "4G"'),
    Key("device", "string", 'the spare block device (kind = "device"); everything on it is destroyed',
        default=None, default_text="none", example='device = "/dev/sdb"'),
    Key("confirm", "string", "the device's path once more, to confirm it may be erased", default=None,
        default_text="none", example='confirm = "/dev/sdb"'),
    Key("paths", "list of strings", 'existing directories to compare (kind = "directory"), one configuration '
        "each", default=[], example='paths = ["/srv/a", "/mnt/b"]'),
), intro="Where the configurations are built.")


# -- [method] -------------------------------------------------------------------------------------------------
METHOD_DEFAULTS = Method().flat()  # every [method] key's default, by its flat name


def _method_key(name: str, description: str, span: Span | None = None, example: str = "", unit: str = "",
                python: type | None = None, default_text: str = "", apart: bool = False,
                choices: tuple[str, ...] = (), several: bool = False) -> Key:
    """A [method] key: its default and Python type are Method's own (`python` where the default is None)."""
    default = METHOD_DEFAULTS[name]
    want = python or type(default)
    words = {bool: "true/false", int: "whole number", float: "number", str: "string"}[want]
    return Key(name, words, description, default=default, default_text=default_text, span=span, apart=apart,
               choices=choices, unit=unit, example=example or f"{name} = {toml_text(default)}", python=want,
               several=several)


METHOD = Section("Method", "method", (
    _method_key("runs", "measured runs per cell (one configuration x one workload); side by side, also "
                "the rounds when rounds is not given", Span(1, 1000), "runs = 5"),
    _method_key("warmup", "unmeasured runs before the measured ones", Span(0, 100), "warmup = 1"),
    _method_key("drop_caches", "drop the page cache before each measured run that starts cold (else only sync)"),
    _method_key("interleave", "one configuration at a time: take the cells in turns rather than one after "
                "another"),
    _method_key("quiesce_seconds", "how long the device must stay idle before a measured run", Span(0, 600),
                "quiesce_seconds = 1.0", "seconds"),
    _method_key("quiesce_timeout", "the longest wait for the device to go idle", Span(0, 86400),
                "quiesce_timeout = 60.0", "seconds"),
    _method_key("monitors", "sample /proc (disk, CPU, pressure, the processes' I/O) during every measured run"),
    _method_key("monitor_interval", "the monitors' sampling interval", Span(0.05, 3600), "monitor_interval = 1.0",
                "seconds"),
    _method_key("target_ci", "stop once every 95% interval is within +/- this share", Span(0, 1, True, True),
                "target_ci = 0.05", "share", float, "none (side by side: 0.05)", apart=True),
    _method_key("max_runs", "with target_ci: the most measured runs per cell (at least runs)", Span(1, 1000),
                "max_runs = 20"),
    _method_key("max_seconds", "the time budget: no new round starts after this long (more than 0)", Span(None, 30 * 24 * 3600),
                "max_seconds = 540", "seconds", float, "none (side by side: 540 per workload)"),
    _method_key("speed", "measure speed (false: a crash test alone)"),
    _method_key("side_by_side", "build every configuration at once and measure them in short slices that take "
                "turns in rounds (false: one configuration at a time)"),
    _method_key("blocks", "side by side: repetitions on freshly made filesystems", Span(1, 100), "blocks = 3",
                python=int, default_text="as many as fit a fifth of the time budget (2 to 6)"),
    _method_key("rounds", "side by side: rounds per block (the fewest when target_ci or max_seconds is given)",
                Span(1, 10000), "rounds = 5", python=int, default_text="until settled or the budget is spent"),
    _method_key("slice_seconds", "side by side: the length of one slice", Span(0.1, 3600), "slice_seconds = 1.0",
                "seconds", float, "the workload's own", apart=True),
    _method_key("freeze_idle", "side by side: hold servers still (SIGSTOP) outside their own slices"),
    _method_key("seed", "seed of the rounds' random order", Span(0, 2**63 - 1), "seed = 42", python=int,
                default_text="from the run id"),
    _method_key("race", "configurations leave the rotation once their place is decided, and the run stops when "
                "the recommendation is settled (false: every configuration to the end)"),
    _method_key("margin", "the smallest difference worth a recommendation over the safer or default choice",
                Span(0, 0.5), "margin = 0.05", "share"),
    _method_key("baseline_copies", "race: images of the baseline per block", Span(1, 12), "baseline_copies = 3",
                python=int, default_text="about the square root of the other configurations"),
    _method_key("rerun_sd", "what moves a configuration's level from one run to the next that no run can see "
                "in itself (a standard deviation on the log scale, added to every interval; estimated across "
                "stored reruns by benchmarks/rerun_variance.py; a kind measured to move more, btrfs or a setup "
                "that stops the cache flushes, carries its own where larger; 0: none at all)", Span(0, 0.5),
                "rerun_sd = 0.01", "share"),
    _method_key("accept_busy", "a busy machine is the condition to measure: slices while other processes took "
                "the CPUs count like the others, and the report says the answer is for a busy machine"),
    _method_key("latency_target", 'search the highest fixed rate each configuration holds within this latency, '
                'e.g. "p99<=5ms"', python=str, default_text="none", example='latency_target = "p99<=5ms"'),
), intro="How the comparison is measured and when it stops.")

CRASH = Section("Crash test", "method", (
    _method_key("crash_states", "power-cut states to check per cell (0: no crash test)", Span(0, 10000),
                "crash_states = 12"),
    _method_key("crash_time", "seconds of checking per cell: after crash_states states, more until the budget ends "
                "or the answer is clear (0: exactly crash_states)", Span(0, 86400), "crash_time = 120", "seconds"),
    _method_key("crash_bound", "with crash_time: a cell that lost nothing stops once its distinct states cut at "
                "random moments rule out a loss in 1 power cut of this many or more (95%, exact binomial), its "
                "time going to the cells after it (0: the whole budget)", Span(0, 10**6), "crash_bound = 150"),
    _method_key("crash_duration", "seconds of commits recorded for each crash test (more than 0)",
                Span(None, 3600), "crash_duration = 3.0", "seconds"),
    _method_key("crash_size", "the crash test's image (small: every write is logged)", Span(64 * MIB, 1024**5),
                "crash_size = 536870912 (512 MiB)", "bytes",
                default_text=f"sized to the job, {512 * MIB} (512 MiB) to {4 * GIB} (4 GiB)"),
    _method_key("crash_unit", "the disk's atomic unit (a power of two): unflushed writes land in pieces of this "
                "size", Span(512, 1024**2), "crash_unit = 4096", "bytes"),
    _method_key("crash_recovery", "share of crash states that lose power again during recovery", Span(0, 1),
                "crash_recovery = 0.25", "share"),
    _method_key("crash_keep", "a directory to keep the images of crash states that lost or broke something",
                default_text="none", example='crash_keep = "/var/tmp/kept"'),
    _method_key("crash_strategies", "comma-separated strategies of choosing which unflushed writes survive",
                default_text="all", choices=STRATEGIES, several=True,
                example='crash_strategies = "unflushed lost,torn writes"'),
), intro="Keys of [method] for the crash test (`pickfs crashtest`, or crash_states with a run).")

FAULTS = Section("Injected I/O errors", "method", (
    _method_key("fault", "`pickfs crashtest`: the disk fails instead of losing power: flush, write:wal, write:data, "
                "write:table, write:journal or write:outside-journal (comma-separated for several)", default_text="none (power cuts)", example='fault = "flush"'),
    _method_key("fault_at", "the k-th matching request once commits flow is the first to fail", Span(1, 10**6),
                "fault_at = 1"),
    _method_key("fault_for", "how long the fault lasts: once, a count, a duration or forever",
                example='fault_for = "once"'),
    _method_key("fault_seed", "the seed of the fault's moment and of the client's transactions", Span(0, 2**31),
                "fault_seed = 1"),
    _method_key("fault_limit", "seconds a fault cell may run past its commits before it is reported as hung",
                Span(1, 86400), "fault_limit = 120", "seconds"),
), intro="Keys of [method] for injected I/O errors (`pickfs crashtest`, see when the disk fails a write).")

METHOD_TABLE = (METHOD, CRASH, FAULTS)  # all are written under [method]


# -- [[config]] -----------------------------------------------------------------------------------------------
_AGED = FsConfig("", "")
AGE_MAX = 0.8  # the most of a filesystem an aging may fill: the workload's data needs the rest
CONFIG = Section("Configurations", "config", (
    Key("preset", "string", "start from this preset (its filesystem and options), or a filesystem type; the keys "
        f"below change it; presets: {_PRESET_NAMES}",
        default_text="none", example='preset = "ext4"'),
    Key("name", "string", "the configuration's name in reports (letters, digits, - _ . +)",
        default_text="the preset's, the fs, or the path's last part", example='name = "ext4-noatime"'),
    Key("fs", "string", "the filesystem type (needs its mkfs.TYPE tool)", default_text="the preset's",
        example='fs = "ext4"'),
    Key("mkfs", "string or list of strings", "mkfs options: one line split as a shell would, or a list of "
        "arguments; only those the filesystem type accepts, none naming a device or a file (the list per type is "
        "in the safety page)", default_text="the preset's, or none", example='mkfs = "-b 4096"'),
    Key("mount", "string or list of strings", "mount options, comma-separated or a list; only those the "
        "filesystem type accepts, none naming a device or a file", default_text="the preset's, or none",
        example='mount = "noatime"'),
    Key("scheduler", "string", "the I/O scheduler of the device under the filesystem", choices=SCHEDULERS,
        default_text="as the device has it", example='scheduler = "mq-deadline"'),
    Key("base", "string", "the configuration (or preset) this one varies: a warning when they differ in more "
        "than one setting", default_text="none", example='base = "ext4"'),
    Key("path", "string", "directory target: the existing directory to use (an absolute path)",
        default_text="none", example='path = "/mnt/a"'),
    Key("description", "string", "a line describing the configuration in reports", default_text="the preset's",
        example='description = "ext4 without atime updates"'),
    Key("age", "share", 'production conditions: age the filesystem first, filled to this share with a file '
        'population, part deleted and refilled; 0.7 or "70%"', default_text="fresh",
        span=Span(0.05, AGE_MAX), unit="share", example='age = "70%"'),
    Key("age_rounds", "whole number", "aging: rounds of deleting and refilling", default=_AGED.age_rounds,
        span=Span(1, 50), example="age_rounds = 3"),
    Key("age_seed", "whole number", "aging: seed of the file population", default=_AGED.age_seed,
        span=Span(0, 2**63 - 1), example="age_seed = 3"),
), intro="One table per configuration to compare, besides those `fs` names.", array=True)

# -- [[workload]] ---------------------------------------------------------------------------------------------
WORKLOAD = Section("Workloads", "workload", (
    Key("name", "string", "the workload (each one's own settings follow)", default=DEFAULT_WORKLOAD,
        choices=tuple(REGISTRY), example=f'name = "{DEFAULT_WORKLOAD}"'),
    Key("label", "string", "the workload's name in reports; distinct when a workload is run twice",
        default_text="the name", example='label = "wal-normal"'),
), intro=f"One table per workload; without any, the plan runs {DEFAULT_WORKLOAD}. Every other key of the table is a "
         "setting of the named workload.", array=True)

SECTIONS: tuple[Section, ...] = (TOP, PRODUCTION, TARGET, METHOD, CRASH, FAULTS, CONFIG, WORKLOAD)
TOP_KEYS = frozenset(TOP.names() | PRODUCTION.names() | set(TABLES))
METHOD_KEYS = {k.name: k for s in METHOD_TABLE for k in s.keys}
