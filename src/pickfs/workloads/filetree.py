"""File-tree workloads (R4): a source tree, a package database, medium files, big files.

Each run is a list of phases timed one by one, with the page cache dropped before each. The input
data is made once per machine, outside the filesystem under test (see treedata), and reused by
every configuration; making it is part of `prepare`, never of a run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, ClassVar

from pickfs.errors import PlanError
from pickfs.model import MetricDef, RawOutput, WorkloadSpec
from pickfs.proc import run as run_program
from pickfs.services.base import Endpoint
from pickfs.units import parse_size
from pickfs.workloads import treedata
from pickfs.workloads.base import Workload, json_doc
from pickfs.workloads.kinds import FILE_TREE

CLIENT = "pickfs.clients.filetree"


def phase_metrics(phases: tuple[tuple[str, str], ...]) -> tuple[MetricDef, ...]:
    """The total (primary), each phase's time, and the peak space used."""
    return (MetricDef("total_s", "s", False, "all phases, each ending with its data on disk"),
            *(MetricDef(f"{name}_s", "s", False, what) for name, what in phases),
            MetricDef("space_peak_bytes", "B", False, "most space used after any phase"))


class FileTreeWorkload(Workload):
    kind = FILE_TREE
    phases: ClassVar[tuple[tuple[str, str], ...]]  # (name, what it does)

    def phase_list(self, spec: WorkloadSpec, datadir: Path) -> list[dict[str, Any]]:
        raise NotImplementedError

    @classmethod
    def run_seconds(cls, spec: WorkloadSpec) -> float:
        return 30.0  # depends on the data and the disk; a guess for the time-left estimate

    @classmethod
    def check_reflink(cls, out: dict[str, Any]) -> None:
        if out["reflink"] not in ("auto", "never"):
            raise PlanError(f"{cls.name} reflink {out['reflink']!r} is not valid",
                            "use auto (cp's default: clone where the filesystem can) or never (copy the data)")

    @classmethod
    def check_counts(cls, out: dict[str, Any], *keys: str) -> None:
        for key in keys:
            try:
                out[key] = int(out[key])
            except (TypeError, ValueError):
                raise PlanError(f"{cls.name} {key} must be a whole number", f"e.g. {key} = {cls.defaults[key]}") from None
            if out[key] < 1:
                raise PlanError(f"{cls.name} {key} must be at least 1", f"e.g. {key} = {cls.defaults[key]}")

    def run(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        doc = {"root": str(datadir), "drop_caches": True, "phases": self.phase_list(spec, datadir)}
        return run_program([sys.executable, "-m", CLIENT], input_text=json.dumps(doc), timeout=6 * 3600,
                           hint=f"the {self.name} phase named above failed")

    @staticmethod
    def parse(raw: str) -> dict[str, float]:
        doc = json.loads(raw)
        if doc.get("client") != "pickfs-filetree":
            raise ValueError("not the output of a file-tree run")
        out = {f"{p['name']}_s": float(p["elapsed_s"]) for p in doc["phases"]}
        out["total_s"] = sum(float(p["elapsed_s"]) for p in doc["phases"])
        if doc["phases"]:
            out["space_peak_bytes"] = float(max(p["space_used_bytes"] for p in doc["phases"]))
        return out

    @staticmethod
    def notes_from(raw: str) -> list[str]:
        if json_doc(raw).get("caches_dropped") is False:
            return ["the page cache was not dropped between phases (needs root): later phases may read from memory"]
        return []


class Tree(FileTreeWorkload):
    name = "tree"
    description = ("a source tree: copy its tarball in, extract it, copy the tree, delete everything "
                   "(Debian's linux-source when installed, else a generated kernel-like tree)")
    phases = (("copy_in", "copy the tarball onto the filesystem"), ("extract", "extract the tarball"),
              ("copy", "copy the extracted tree (cp -a)"), ("delete", "delete the tarball and both trees"))
    metrics = phase_metrics(phases)
    breakdown = ("copy_in_s", "extract_s", "copy_s", "delete_s")
    defaults: ClassVar[dict[str, Any]] = {
        "source": "auto",  # auto (linux-source if installed, else generated), generated, or a tarball's path
        "files": treedata.KERNEL_FILES,  # generated tree only
        "seed": 1,
        "reflink": "auto",  # cp's default; xfs and btrfs then clone instead of copying
    }

    @classmethod
    def check(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = dict(settings)
        cls.check_counts(out, "files")
        cls.check_reflink(out)
        try:
            out["seed"] = int(out["seed"])
        except (TypeError, ValueError, OverflowError):
            raise PlanError(f"{cls.name} seed must be a whole number", "e.g. seed = 1") from None
        src = str(out["source"])
        if src not in ("auto", "generated") and not Path(src).is_file():
            raise PlanError(f"tree source {src!r} is not a file", 'use "auto", "generated" or a tarball\'s path')
        return out

    @classmethod
    def space_needed(cls, spec: WorkloadSpec) -> int | None:
        if cls._source_kind(spec) != "generated":
            return None
        return 3 * treedata.estimated_tree_bytes(spec.get("files"))

    @staticmethod
    def _source_kind(spec: WorkloadSpec) -> str:
        src = spec.get("source")
        if src == "auto":
            return "linux-source" if treedata.linux_source_tarballs() else "generated"
        return "generated" if src == "generated" else "tarball"

    def tarball(self, spec: WorkloadSpec) -> Path:
        kind = self._source_kind(spec)
        if kind == "linux-source":
            return treedata.decompressed_tarball(self.cache, treedata.linux_source_tarballs()[-1])
        if kind == "tarball":
            return treedata.decompressed_tarball(self.cache, Path(spec.get("source")))
        return treedata.generated_tree_tarball(self.cache, spec.get("files"), spec.get("seed"))

    def prepare(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        tar = self.tarball(spec)
        return RawOutput(json.dumps({"source": str(tar), "kind": self._source_kind(spec),
                                     "bytes": tar.stat().st_size}), 0.0)

    def phase_list(self, spec: WorkloadSpec, datadir: Path) -> list[dict[str, Any]]:
        tar = self.tarball(spec)
        src, tree, copy = datadir / "source.tar", datadir / "tree", datadir / "tree-copy"
        return [
            {"name": "copy_in", "op": "copy_file", "src": str(tar), "dst": str(src), "preload": [str(tar)]},
            {"name": "extract", "op": "extract", "src": str(src), "dst": str(tree)},
            {"name": "copy", "op": "copy_tree", "src": str(tree), "dst": str(copy), "reflink": spec.get("reflink")},
            {"name": "delete", "op": "delete", "paths": [str(src), str(tree), str(copy)]},
        ]


class SmallFiles(FileTreeWorkload):
    name = "smallfiles"
    description = ("a package manager's database: many small files in many directories written and synced, "
                   "then searched and queried (read back) three times")
    phases = (("write", "copy the database in (a directory and three small files per package)"),
              ("search", "list and stat every entry, like find"), ("query", "read every file, `queries` times"),
              ("delete", "delete the database"))
    metrics = phase_metrics(phases)
    breakdown = ("write_s", "search_s", "query_s", "delete_s")
    defaults: ClassVar[dict[str, Any]] = {"packages": 2000, "queries": 3, "seed": 1}

    @classmethod
    def check(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = dict(settings)
        cls.check_counts(out, "packages", "queries")
        try:
            out["seed"] = int(out["seed"])
        except (TypeError, ValueError, OverflowError):
            raise PlanError(f"{cls.name} seed must be a whole number", "e.g. seed = 1") from None
        return out

    def prepare(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        db = treedata.package_db(self.cache, spec.get("packages"), spec.get("seed"))
        return RawOutput(json.dumps({"source": str(db)}), 0.0)

    def phase_list(self, spec: WorkloadSpec, datadir: Path) -> list[dict[str, Any]]:
        src = treedata.package_db(self.cache, spec.get("packages"), spec.get("seed"))
        db = datadir / "local"
        return [
            {"name": "write", "op": "copy_tree", "src": str(src), "dst": str(db), "preload": [str(src)]},
            {"name": "search", "op": "search", "src": str(db)},
            {"name": "query", "op": "read", "src": str(db), "needle": "%NAME%\npackage7\n",
             "times": spec.get("queries")},
            {"name": "delete", "op": "delete", "paths": [str(db)]},
        ]


class _CopyFiles(FileTreeWorkload):
    file_kind: ClassVar[str]  # which generated files it copies (treedata.random_files)

    def files(self, spec: WorkloadSpec) -> Path:
        raise NotImplementedError

    def prepare(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        return RawOutput(json.dumps({"source": str(self.files(spec))}), 0.0)


class MediumFiles(_CopyFiles):
    name = "mediumfiles"
    description = "a music collection: copy in a folder of ~4 MB files, then delete it"
    file_kind = "medium"
    phases = (("copy_in", "copy the folder onto the filesystem"), ("delete", "delete it"))
    metrics = phase_metrics(phases)
    breakdown = ("copy_in_s", "delete_s")
    defaults: ClassVar[dict[str, Any]] = {"total": "2G", "seed": 1}
    FILE_LOW, FILE_HIGH = 3_500_000, 4_500_000

    @classmethod
    def check(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = dict(settings)
        out["total"] = parse_size(out["total"])
        try:
            out["seed"] = int(out["seed"])
        except (TypeError, ValueError, OverflowError):
            raise PlanError(f"{cls.name} seed must be a whole number", "e.g. seed = 1") from None
        if out["total"] < cls.FILE_HIGH:
            raise PlanError("mediumfiles total is below one file (~4 MB)", 'e.g. total = "2G"')
        return out

    @classmethod
    def space_needed(cls, spec: WorkloadSpec) -> int | None:
        return int(spec.get("total"))

    def files(self, spec: WorkloadSpec) -> Path:
        count = max(1, spec.get("total") * 2 // (self.FILE_LOW + self.FILE_HIGH))
        return treedata.random_files(self.cache, self.file_kind, count, self.FILE_LOW, self.FILE_HIGH, spec.get("seed"))

    def phase_list(self, spec: WorkloadSpec, datadir: Path) -> list[dict[str, Any]]:
        src = self.files(spec)
        return [
            {"name": "copy_in", "op": "copy_tree", "src": str(src), "dst": str(datadir / "music"), "preload": [str(src)]},
            {"name": "delete", "op": "delete", "paths": [str(datadir / "music")]},
        ]


class BigFiles(_CopyFiles):
    name = "bigfiles"
    description = "virtual-disk images: copy multi-GB files in, copy them again, delete them"
    file_kind = "big"
    phases = (("copy_in", "copy the files onto the filesystem"),
              ("copy", "copy them on the filesystem (xfs and btrfs clone them unless reflink = never)"),
              ("delete", "delete both copies"))
    metrics = phase_metrics(phases)
    breakdown = ("copy_in_s", "copy_s", "delete_s")
    defaults: ClassVar[dict[str, Any]] = {"files": 2, "file_size": "2.2G", "seed": 1, "reflink": "auto"}

    @classmethod
    def check(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = dict(settings)
        cls.check_counts(out, "files")
        cls.check_reflink(out)
        out["file_size"] = parse_size(out["file_size"])
        try:
            out["seed"] = int(out["seed"])
        except (TypeError, ValueError, OverflowError):
            raise PlanError(f"{cls.name} seed must be a whole number", "e.g. seed = 1") from None
        if out["file_size"] < 1024**2:
            raise PlanError("bigfiles file_size must be at least 1M", 'e.g. file_size = "2.2G"')
        return out

    @classmethod
    def space_needed(cls, spec: WorkloadSpec) -> int | None:
        return int(2 * spec.get("files") * spec.get("file_size"))

    def files(self, spec: WorkloadSpec) -> Path:
        size = spec.get("file_size")
        return treedata.random_files(self.cache, self.file_kind, spec.get("files"), size, size, spec.get("seed"))

    def phase_list(self, spec: WorkloadSpec, datadir: Path) -> list[dict[str, Any]]:
        src = self.files(spec)
        images, copy = datadir / "images", datadir / "images-copy"
        return [
            {"name": "copy_in", "op": "copy_tree", "src": str(src), "dst": str(images), "preload": [str(src)]},
            {"name": "copy", "op": "copy_tree", "src": str(images), "dst": str(copy), "reflink": spec.get("reflink")},
            {"name": "delete", "op": "delete", "paths": [str(images), str(copy)]},
        ]
