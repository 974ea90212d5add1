"""What every workload provides. parse() is a pure function of the raw output."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from pickfs.databases.values import check_values
from pickfs.errors import PlanError
from pickfs.model import MetricDef, RawOutput, Target, WorkloadSpec
from pickfs.services.base import Endpoint
from pickfs.workloads.kinds import WorkloadKind


class Workload(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    metrics: ClassVar[tuple[MetricDef, ...]]  # the first is the primary metric
    kind: ClassVar[WorkloadKind]  # what kind of work it is (workloads/kinds.py): picks the report's charts
    defaults: ClassVar[dict[str, Any]]
    service: ClassVar[str | None] = None  # a database server to start on the filesystem under test
    database: ClassVar[str | None] = None  # the database it drives: sqlite, postgresql, mariadb, firebird
    supports_raw: ClassVar[bool] = False  # can run straight on a block device (the raw baseline)
    # metrics shown per configuration in a breakdown table (phases, sync methods), besides the primary
    breakdown: ClassVar[tuple[str, ...]] = ()
    # Side by side: can the run be cut into short slices that take turns with other configurations
    # on filesystems prepared once? (Its primary metric must then be a rate per second.)
    sliceable: ClassVar[bool] = False
    # the setting that says how many clients (terminals, threads) drive the server: a plan's `clients` dimension
    clients_setting: ClassVar[str | None] = None
    slice_seconds: ClassVar[float] = 1.0  # the default slice length
    # A crash test runs the workload itself and judges each power-cut state by its own check (the user's
    # program), rather than driving the workload's database with pickfs's commits client.
    checks_itself: ClassVar[bool] = False
    # settings whose default is one value that also take a list of values (a command and its arguments)
    list_settings: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, cache: Path | None = None) -> None:
        # Where generated input data is kept between configurations: never on the filesystem under test.
        self.cache = cache or Path(Target().workdir) / "data"
        # A private scratch directory pickfs made for this configuration (when the data has no directory of
        # its own: a database on the raw device keeps its lock files here); None when there is none.
        self.scratch: Path | None = None

    @classmethod
    def normalize(cls, settings: dict[str, Any]) -> dict[str, Any]:
        """Settings merged over the defaults and checked; raises PlanError naming the fix."""
        unknown = sorted(set(settings) - set(cls.defaults))
        if unknown:
            raise PlanError(
                f"workload {cls.name} has no setting {', '.join(unknown)}",
                f"valid settings: {', '.join(sorted(cls.defaults))}",
            )
        merged = dict(cls.defaults)
        merged.update(settings)
        check_values(merged, f"{cls.name}")
        return cls.check(merged)

    @classmethod
    def setting_names(cls) -> set[str]:
        """Every setting this workload accepts."""
        return set(cls.defaults)

    @classmethod
    def check(cls, settings: dict[str, Any]) -> dict[str, Any]:
        return settings

    @classmethod
    def require_counts(cls, settings: dict[str, Any], *keys: str) -> None:
        """Settings that must be whole numbers of at least 1."""
        for key in keys:
            if not isinstance(settings[key], int) or isinstance(settings[key], bool) or settings[key] < 1:
                raise PlanError(f"{cls.name} {key} must be a whole number of at least 1", f"e.g. {key} = 1")

    @classmethod
    def primary(cls) -> MetricDef:
        return cls.metrics[0]

    @classmethod
    def unavailable_reason(cls, spec: WorkloadSpec | None = None) -> str | None:
        return None

    @classmethod
    def kind_for(cls, spec: WorkloadSpec) -> WorkloadKind:
        """What kind of work it is with these settings."""
        return cls.kind

    @classmethod
    def service_for(cls, spec: WorkloadSpec) -> str | None:
        """The database server this workload needs started on the filesystem under test."""
        return cls.service

    @classmethod
    def database_for(cls, spec: WorkloadSpec) -> str | None:
        """The database this workload drives with these settings (what a crash test checks; risks name)."""
        return cls.database

    @classmethod
    def service_settings(cls, spec: WorkloadSpec) -> dict[str, Any]:
        """The settings handed to the server (each service picks the ones it knows)."""
        return dict(spec.settings)

    @classmethod
    def run_seconds(cls, spec: WorkloadSpec) -> float:
        """About how long one run takes, for the time-left estimate."""
        return float(spec.get("duration", 5.0) or 5.0)

    @classmethod
    def slice_spec(cls, spec: WorkloadSpec, seconds: float) -> WorkloadSpec:
        """The settings of one slice of `seconds` (the run's length replaced)."""
        settings = dict(spec.settings)
        settings["duration"] = seconds
        if "transactions" in settings:
            settings["transactions"] = 0
        return WorkloadSpec(spec.name, spec.label, tuple(sorted(settings.items())))

    @classmethod
    def space_needed(cls, spec: WorkloadSpec) -> int | None:
        """Bytes of data the workload puts on the filesystem at its peak, when known beforehand."""
        return None

    @classmethod
    def scaled(cls, spec: WorkloadSpec, data_bytes: int) -> dict[str, Any] | None:
        """The settings with the data grown to about `data_bytes` (a plan's `scale`); None: no data to grow."""
        return None

    @classmethod
    def raw_ok(cls, spec: WorkloadSpec) -> bool:
        """Can it run with these settings straight on a block device (the raw baseline)?"""
        return cls.supports_raw

    @classmethod
    def image_growth(cls, spec: WorkloadSpec, image_bytes: int) -> int:
        """How far a sparse image under this workload is expected to grow: the filesystem's own
        metadata (a journal, inode tables: up to 5% of the image and 128 MiB) and the workload's
        data (1 GiB when it does not say)."""
        return min(image_bytes, (cls.space_needed(spec) or 1024**3) + image_bytes // 20 + 128 * 1024**2)

    @abstractmethod
    def prepare(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        """Lay out the data the run needs. Never counted as a run."""

    @abstractmethod
    def run(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        """One run; the raw output is kept verbatim."""

    @staticmethod
    @abstractmethod
    def parse(raw: str) -> dict[str, float]:
        """Metrics from raw output (pure)."""

    @staticmethod
    def notes_from(raw: str) -> list[str]:
        """Findings in a run's raw output worth a note beside its figures (pure)."""
        return []


def json_doc(raw: str) -> dict[str, Any]:
    """A raw output that should be one JSON object; {} when it is not (for notes, never for figures)."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}
