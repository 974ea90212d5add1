"""The space a search covers (pure): filesystems, each with dimensions of mkfs, mount, scheduler and database values.

A filesystem type's built-in dimensions are one of its facts (pickfs.fsfacts `FsFacts.search_space`, where
`Dimension`, `Value` and `Needs` are declared): a type that declares them is searchable by name.

A dimension lists its values, the first being the default (what mkfs and mount do unasked). A candidate is
one value of every dimension of one filesystem; its configuration (an FsConfig) is named after the
filesystem and the values that differ from the defaults: "xfs+noatime+log128m", or "ext4+defaults".

A database value sets workload settings (sqlite-tpcb: journal_mode, synchronous): the configuration carries
them (FsConfig.database) and its cells run the workload with them over the plan's, so it races side by side
with the others under the same workload label, paired as any mount option is.

Values that trade safety are found by the risk table (pickfs.risks) on the configuration they make and the
database settings it runs with, and left out unless asked for. Values this machine cannot build (a filesystem the kernel or its mkfs lacks, a
scheduler the kernel does not offer, a feature newer than the kernel or the tools) are pruned before
anything runs, each with its reason.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pickfs.errors import PlanError
from pickfs.fsfacts import DEFAULT, Dimension, Value, facts_of, searchable
from pickfs.model import SCHEDULERS, FsConfig, WorkloadSpec
from pickfs.risks import config_risks, risks_of
from pickfs.stack.filesystems import check_options
from pickfs.workloads import workload_class

DEFAULT_LABEL = "defaults"
_LABEL = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class FsSpace:
    fstype: str
    dimensions: tuple[Dimension, ...]

    def size(self) -> int:
        n = 1
        for d in self.dimensions:
            n *= len(d.values)
        return n


@dataclass(frozen=True)
class Candidate:
    """One point of the space: a filesystem and the index of its value in every dimension."""

    fstype: str
    choice: tuple[int, ...]


@dataclass(frozen=True)
class Space:
    filesystems: tuple[FsSpace, ...]
    pruned: tuple[str, ...] = ()  # what was left out and why, one line each
    unsafe: bool = False  # values that trade safety were asked for
    workload: WorkloadSpec | None = None  # what the database values are set over (their risks need it)
    backend: str | None = None  # the database the workload drives (pickfs.risks.database_of)

    def of(self, fstype: str) -> FsSpace:
        return next(f for f in self.filesystems if f.fstype == fstype)

    def size(self) -> int:
        return sum(f.size() for f in self.filesystems)

    def default(self, fstype: str) -> Candidate:
        return Candidate(fstype, (0,) * len(self.of(fstype).dimensions))

    def candidates(self) -> Iterator[Candidate]:
        for fs in self.filesystems:
            for choice in itertools.product(*(range(len(d.values)) for d in fs.dimensions)):
                yield Candidate(fs.fstype, tuple(choice))

    def values(self, c: Candidate) -> list[tuple[Dimension, Value]]:
        fs = self.of(c.fstype)
        return [(d, d.values[i]) for d, i in zip(fs.dimensions, c.choice, strict=True)]

    def name(self, c: Candidate) -> str:
        labels = [v.label for d, v in self.values(c) if v.label and v is not d.values[0]]
        return "+".join([c.fstype, *(labels or [DEFAULT_LABEL])])

    def config(self, c: Candidate) -> FsConfig:
        mkfs: list[str] = []
        mount: list[str] = []
        scheduler: str | None = None
        database: dict[str, str] = {}
        changed = []
        for d, v in self.values(c):
            mkfs += v.mkfs
            mount += v.mount
            scheduler = v.scheduler or scheduler
            database.update(v.database)
            if v is not d.values[0]:
                changed.append(f"{d.name}: {v.words}")
        return FsConfig(self.name(c), c.fstype, tuple(mkfs), tuple(mount), scheduler,
                        description=f"{c.fstype}, " + ("; ".join(changed) if changed else "every default"),
                        database=tuple(sorted(database.items())))

    def risks(self, config: FsConfig) -> list[str]:
        """What a configuration risks on a power cut: its filesystem settings, then its database settings."""
        out = config_risks(config)
        if config.database and self.workload is not None:
            merged = {**dict(self.workload.settings), **dict(config.database)}
            out += risks_of(WorkloadSpec(self.workload.name, self.workload.label, tuple(sorted(merged.items()))),
                            self.backend)
        return out

    def safe(self, c: Candidate) -> bool:
        return not self.risks(self.config(c))

    def allowed(self, c: Candidate) -> bool:
        return self.unsafe or self.safe(c)

    def expand(self) -> list[FsConfig]:
        """Every configuration of the space the search may build (safe ones only, unless asked)."""
        return [self.config(c) for c in self.candidates() if self.allowed(c)]


# --- the built-in spaces: each type's own (pickfs.fsfacts), and the database's ---------------------------------
# the database's own settings per workload: (dimension, setting, the values to try); the workload's own value
# of the setting is the dimension's default, the others its values
BUILT_IN_DATABASE: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {
    "sqlite-tpcb": (("journal mode", "journal_mode", ("WAL", "DELETE")),
                    ("synchronous", "synchronous", ("FULL", "NORMAL"))),
}


def database_dimensions(spec: WorkloadSpec | None) -> tuple[Dimension, ...]:
    """The built-in database dimensions of a workload, each value a setting other than the workload's own."""
    if spec is None:
        return ()
    out = []
    for name, key, options in BUILT_IN_DATABASE.get(spec.name, ()):
        own = str(spec.get(key, options[0])).upper()
        others = [Value(f"{key.split('_')[0]}-{o.lower()}", database=((key, o),)) for o in options if o != own]
        if others:
            out.append(Dimension(name, (DEFAULT, *others)))
    return tuple(out)


def built_in(fstypes: Sequence[str] | None = None, unsafe: bool = False,
             workload: WorkloadSpec | None = None, backend: str | None = None) -> Space:
    """The built-in spaces of `fstypes` (every type that declares one, when None), each with the workload's
    built-in database dimensions (if any)."""
    fstypes = searchable() if fstypes is None else fstypes
    unknown = [f for f in fstypes if not facts_of(f).search_space]
    if unknown:
        raise PlanError(f"no built-in search space for {', '.join(unknown)}",
                        f"built-in spaces: {', '.join(searchable())}; declare others in the plan's [search] section")
    db = database_dimensions(workload)
    return Space(tuple(checked_options(FsSpace(f, (*facts_of(f).search_space, *db))) for f in fstypes), unsafe=unsafe,
                 workload=workload, backend=backend)


# --- a declared space: the plan's [search] section -------------------------------------------------------
def parse_value(text: str, where: str) -> Value:
    """'' (the default), 'mount:noatime', 'mount:logbufs=8,logbsize=256k', 'mkfs:-J size=256', 'scheduler:none',
    'set:journal_mode=DELETE' (a database setting: the workload's KEY=VALUE, several comma-separated)."""
    text = text.strip()
    if not text:
        return DEFAULT
    kind, sep, rest = text.partition(":")
    rest = rest.strip()
    if not sep or kind not in ("mkfs", "mount", "scheduler", "set") or not rest:
        raise PlanError(f"{where}: value {text!r} is not KIND:OPTIONS",
                        'write "mount:noatime", "mkfs:-J size=256", "scheduler:mq-deadline", '
                        '"set:journal_mode=DELETE", or "" for the default')
    label = _LABEL.sub("-", rest.replace("=", "")).strip("-")
    if kind == "set":
        return _setting_value(rest, where)
    if kind == "mkfs":
        return Value(label, tuple(rest.split()))
    if kind == "mount":
        return Value(label, mount=tuple(o.strip() for o in rest.split(",") if o.strip()))
    if rest not in SCHEDULERS:
        raise PlanError(f"{where}: unknown I/O scheduler {rest!r}", f"use one of {', '.join(SCHEDULERS)}")
    return Value(rest, scheduler=rest)


def _setting_value(rest: str, where: str) -> Value:
    pairs = [p.strip().partition("=") for p in rest.split(",") if p.strip()]
    if not pairs or any(not k.strip() or not sep or not v.strip() for k, sep, v in pairs):
        raise PlanError(f"{where}: database value {rest!r} is not KEY=VALUE", 'e.g. "set:journal_mode=DELETE"')
    settings = tuple((k.strip(), v.strip().upper() if k.strip() in _UPPER else v.strip()) for k, _, v in pairs)
    label = "+".join(_LABEL.sub("-", f"{k.split('_')[0]}-{v}".lower()).strip("-") for k, v in settings)
    return Value(label, database=settings)


_UPPER = frozenset({"journal_mode", "synchronous"})  # sqlite's pragma values, as the workload writes them


def _dimension(name: str, values: Any, where: str) -> Dimension:
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise PlanError(f"{where}.{name} must be a list of strings, the default first",
                        f'e.g. {name} = ["", "mount:noatime"]')
    parsed = tuple(parse_value(v, f"{where}.{name}") for v in values)
    labels = [v.label for v in parsed]
    if len(set(labels)) != len(labels):
        raise PlanError(f"{where}.{name} lists a value twice", "list each value once, the default (\"\") first")
    return Dimension(name, parsed)


def _database_table(t: Mapping[str, Any], workload: WorkloadSpec | None) -> tuple[Dimension, ...]:
    """[search.database]: dimensions of database settings for every filesystem (replacing the workload's
    built-in ones; an empty table searches none)."""
    declared = t.get("database")
    if declared is None:
        return database_dimensions(workload)
    if not isinstance(declared, dict):
        raise PlanError("[search] database must be a table of dimensions",
                        'e.g. [search.database] journal = ["", "set:journal_mode=DELETE"]')
    dims = tuple(_dimension(name, values, "[search.database]") for name, values in declared.items())
    for d in dims:
        if any(not v.database for v in d.values[1:]):
            raise PlanError(f"[search.database].{d.name} lists a value that is not a database setting",
                            'write database values as "set:KEY=VALUE", e.g. "set:journal_mode=DELETE"')
    return dims


def from_table(t: Mapping[str, Any], workload: WorkloadSpec | None = None, backend: str | None = None) -> Space:
    """The plan's [search] section: filesystems (their built-in spaces), unsafe, scheduler values (for every
    filesystem), [search.<fstype>] tables of dimensions that replace a filesystem's built-in ones, and a
    [search.database] table of database settings for every filesystem (the workload's built-in ones if absent)."""
    allowed = {"filesystems", "unsafe", "scheduler", *searchable(), "sample", "database"}
    extra = sorted(k for k in t if k not in allowed and not isinstance(t[k], dict))
    if extra:
        raise PlanError(f"[search] has no setting {', '.join(extra)}",
                        "its settings: filesystems, unsafe, scheduler, sample, a [search.FSTYPE] table per "
                        "filesystem and a [search.database] table")
    fstypes = t.get("filesystems", [k for k in t if isinstance(t[k], dict) and k != "database"] or list(searchable()))
    if not isinstance(fstypes, list) or not fstypes or not all(isinstance(f, str) for f in fstypes):
        raise PlanError("[search] filesystems must be a list of names", 'e.g. filesystems = ["ext4", "xfs"]')
    unsafe = t.get("unsafe", False)
    if not isinstance(unsafe, bool):
        raise PlanError("[search] unsafe must be true or false", "unsafe = false keeps settings that risk data out")
    spaces = []
    database = _database_table(t, workload)
    for fstype in fstypes:
        declared = t.get(fstype)
        if declared is not None and not isinstance(declared, dict):
            raise PlanError(f"[search] {fstype} must be a table of dimensions", f'e.g. [search.{fstype}] atime = ["", "mount:noatime"]')
        dims = {d.name: d for d in facts_of(fstype).search_space} if declared is None else {}
        for name, values in (declared or {}).items():
            dims[name] = _dimension(name, values, f"[search.{fstype}]")
        if "scheduler" in t:
            dims["scheduler"] = _dimension("scheduler", [f"scheduler:{s}" for s in t["scheduler"]], "[search]")
        for d in database:
            dims.setdefault(d.name, d)
        if not dims:
            raise PlanError(f"[search] {fstype} has no built-in space and no dimensions",
                            f'add a [search.{fstype}] table, e.g. atime = ["", "mount:noatime"]')
        spaces.append(checked_options(FsSpace(fstype, tuple(dims.values()))))
    if workload is not None:
        _check_database_values(spaces, workload)
    return Space(tuple(spaces), unsafe=unsafe, workload=workload, backend=backend)


def _check_database_values(spaces: Sequence[FsSpace], workload: WorkloadSpec) -> None:
    """Every database value is a setting the workload takes, with a value it accepts (its own one-line error)."""
    kind = workload_class(workload.name)
    for fs in spaces:
        for d in fs.dimensions:
            for v in d.values:
                if v.database:
                    try:
                        kind.normalize({**dict(workload.settings), **dict(v.database)})
                    except PlanError as exc:
                        raise PlanError(f"[search] {fs.fstype} {d.name} {v.label}: {exc.message}", exc.hint) from None


def checked_options(fs: FsSpace) -> FsSpace:
    """The filesystem's space, once every mkfs and mount value is one its type accepts (none may name a device or
    a file: stack/option_grammar.py); PlanError naming the dimension otherwise."""
    for d in fs.dimensions:
        for v in d.values:
            check_options(FsConfig(f"[search.{fs.fstype}] {d.name} {v.label!r}", fs.fstype, v.mkfs, v.mount))
    return fs


# --- what this machine lacks -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Facts:
    """What the machine offers: filesystems it cannot build (with why), schedulers, versions."""

    missing: Mapping[str, str] = field(default_factory=dict)  # fstype -> reason
    schedulers: frozenset[str] = frozenset(SCHEDULERS)
    versions: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # "kernel", "e2fsprogs", ...


def _lacks(v: Value, facts: Facts) -> str | None:
    if v.scheduler and v.scheduler not in facts.schedulers:
        return f"the kernel offers no {v.scheduler} scheduler (it offers {', '.join(sorted(facts.schedulers))})"
    for n in v.needs:
        have = facts.versions.get(n.what)
        if have is not None and have < n.version:
            return f"needs {n.words()}, this machine has {'.'.join(map(str, have))}"
    return None


def prune(space: Space, facts: Facts) -> Space:
    """The space without what this machine cannot build, and why each was left out (pure)."""
    kept: list[FsSpace] = []
    why = list(space.pruned)
    for fs in space.filesystems:
        if fs.fstype in facts.missing:
            why.append(f"{fs.fstype}: left out, {facts.missing[fs.fstype]}")
            continue
        dims = []
        for d in fs.dimensions:
            values = []
            for i, v in enumerate(d.values):
                lack = _lacks(v, facts)
                if lack is None or i == 0:
                    values.append(v)
                else:
                    why.append(f"{fs.fstype} {d.name} {v.label}: left out, {lack}")
            if len(values) > 1:
                dims.append(Dimension(d.name, tuple(values)))
        kept.append(FsSpace(fs.fstype, tuple(dims)))
    if not kept:
        raise PlanError("this machine can build none of the search space's filesystems: " + "; ".join(why),
                        "install what the reasons name, or search other filesystems")
    return replace(space, filesystems=tuple(kept), pruned=tuple(why))


def unsafe_left_out(space: Space) -> list[str]:
    """The values that trade safety, named once each with what they risk (pure)."""
    out: dict[str, str] = {}
    for fs in space.filesystems:
        for d in fs.dimensions:
            for v in d.values[1:]:
                risks = space.risks(FsConfig("x", fs.fstype, v.mkfs, v.mount, v.scheduler, database=v.database))
                if risks:
                    out[f"{fs.fstype} {v.label}"] = risks[0]
    return [f"{k}: {r}" for k, r in out.items()]
