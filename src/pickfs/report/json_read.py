"""A run's JSON export read back (pure): schema pickfs.run/2 as written now, and pickfs.run/1 as pickfs wrote it
before, brought to /2's shape (what /1 did not record is null: the setup of the answer, the family of each
interval)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pickfs.analysis.setup import what_it_is
from pickfs.model import FsConfig

CURRENT = "pickfs.run/2"
READ = ("pickfs.run/1", CURRENT)


class NotARunExport(ValueError):
    """A document that is not a run export of a schema this pickfs reads."""


def _configuration(c: Mapping[str, Any]) -> dict[str, Any]:
    config = FsConfig(str(c["name"]), str(c["fstype"]), tuple(c.get("mkfs_options") or ()),
                      tuple(c.get("mount_options") or ()), c.get("scheduler"))
    return {"name": config.name, "what": what_it_is(config), **dict(c)}


def read_run(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The export as schema pickfs.run/2; NotARunExport (naming the schemas read) for anything else."""
    schema = doc.get("schema") if isinstance(doc, Mapping) else None
    if schema not in READ:
        raise NotARunExport(f"not a pickfs run export (schema {schema!r}); this pickfs reads {', '.join(READ)}")
    if schema == CURRENT:
        return dict(doc)
    out = dict(doc)
    out["schema"] = CURRENT
    out["live"] = False  # /1 did not say; a /1 export of a run still being executed gave an answer all the same
    out["answers"] = [{**a, "setup": None, **({"interval": None} if "contenders" in a else {})}
                      for a in doc.get("answers", [])]
    out["tables"] = [{**t, "answer": {**t.get("answer", {}), "setup": None}, "interval": None}
                     for t in doc.get("tables", [])]
    out["configurations"] = [_configuration(c) for c in (doc.get("plan") or {}).get("configs", [])]
    return out
