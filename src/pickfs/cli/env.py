"""`pickfs env [PATH]` and `pickfs env diff A B`: the storage stack's fingerprint, and what differs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from pickfs import console
from pickfs.cli.common import open_store, results_option, workdir_option
from pickfs.errors import NotFound, PlanError
from pickfs.fingerprint import fingerprint
from pickfs.report.envdiff import diff
from pickfs.safepaths import check_target, read_small, write_file

MAX_FINGERPRINT = 1024**2  # bytes: a fingerprint is a few hundred keys


def fingerprint_of(data: Any, ref: str) -> dict[str, str]:
    """The fingerprint in a parsed JSON file: an object of names to plain values, or one under "fingerprint"
    (pure; PlanError naming the file otherwise)."""
    fp = data.get("fingerprint", data) if isinstance(data, dict) else None
    if not isinstance(fp, dict) or not all(v is None or isinstance(v, (str, int, float, bool)) for v in fp.values()):
        raise PlanError(f"{ref} is not a fingerprint (an object of names and plain values)",
                        "make one with: pickfs env PATH --json FILE")
    return {str(k): str(v) for k, v in fp.items() if v is not None}


def _load(ref: str, workdir: str, results_path: Path | None) -> tuple[str, dict[str, str]]:
    """A fingerprint from a JSON file (`pickfs env --json`) or from a stored run."""
    p = Path(ref)
    if os.path.lexists(p):
        try:
            data = json.loads(read_small(p, MAX_FINGERPRINT, "fingerprint file").decode("utf-8"))
        except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, too deep, too large, not a file
            why = str(exc) if "fingerprint file" in str(exc) else f"{ref} is not a fingerprint"
            raise PlanError(why, "make one with: pickfs env PATH --json FILE") from None
        except OSError as exc:
            raise PlanError(f"fingerprint file {ref} cannot be read: {exc.strerror}", "check the path") from None
        return ref, fingerprint_of(data, ref)
    record = open_store(workdir, results_path, read_only=True).load(ref)
    fp = record.host.get("fingerprint")
    if not fp:
        raise NotFound(f"run {record.id} has no stored fingerprint", "it predates pickfs env; compare two JSON files")
    return f"run {record.id}", fingerprint_of(fp, f"run {record.id}'s stored fingerprint")


@click.command("env")
@click.argument("args", nargs=-1)
@click.option("--json", "json_path", type=click.Path(path_type=Path), help="write the fingerprint as JSON ('-': stdout)")
@workdir_option
@results_option
def command(args: tuple[str, ...], json_path: Path | None, workdir: str, results_path) -> None:
    """Fingerprint the storage stack under PATH (default /), or: env diff A B.

    A and B are fingerprint files from `pickfs env PATH --json FILE` (say one from a dev box
    and one from a CI box) or run ids, whose fingerprints pickfs stores with every run.
    """
    if args and args[0] == "diff":
        if len(args) != 3:
            raise PlanError("env diff takes two fingerprints", "pickfs env diff A.json B.json (or two run ids)")
        (name_a, a), (name_b, b) = _load(args[1], workdir, results_path), _load(args[2], workdir, results_path)
        diffs = diff(a, b)
        if not diffs:
            console.info(f"no differences between {name_a} and {name_b}")
            return
        table = Table(title=f"{name_a} -> {name_b}", title_justify="left")
        for col in ("", "setting", "A", "B"):
            table.add_column(col)
        for d in diffs:
            table.add_row(Text("storage", style="bold yellow") if d.storage else Text(""), Text(d.key),  # text, never markup
                          Text(d.a if d.a is not None else "(absent)"), Text(d.b if d.b is not None else "(absent)"))
        console.show(table)
        return
    if len(args) > 1:
        raise PlanError("env takes one path", "pickfs env /var/lib/postgresql, or pickfs env diff A B")
    if json_path and str(json_path) != "-":
        check_target(json_path, "--json")  # before the fingerprint is taken: a path that cannot take it, said first
    fp = fingerprint(args[0] if args else "/")
    if json_path:
        text = json.dumps(fp, indent=1) + "\n"
        if str(json_path) == "-":
            click.echo(text, nl=False)
            return
        write_file(json_path, text.encode(), "--json")
        console.info(f"fingerprint written to {json_path}")
    table = Table(title=f"storage stack under {fp['path']}", title_justify="left")
    table.add_column("setting")
    table.add_column("value")
    for k, v in fp.items():
        table.add_row(k, v)
    console.show(table)
