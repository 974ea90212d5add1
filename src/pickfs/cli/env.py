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
from pickfs.cli.common import read_store, results_option, workdir_option
from pickfs.cli.examples import examples
from pickfs.errors import NotFound, PlanError
from pickfs.fingerprint import fingerprint
from pickfs.report.envdiff import diff
from pickfs.report.json_text import strict_json
from pickfs.safepaths import check_target, read_small, write_export

MAX_FINGERPRINT = 1024**2  # bytes: a fingerprint is a few hundred keys


def fingerprint_of(data: Any, ref: str) -> dict[str, str]:
    """The fingerprint in a parsed JSON file: an object of names to plain values, or one under "fingerprint"
    (pure; PlanError naming the file otherwise)."""
    fp = data.get("fingerprint", data) if isinstance(data, dict) else None
    if not isinstance(fp, dict) or not all(v is None or isinstance(v, (str, int, float, bool)) for v in fp.values()):
        raise PlanError(f"{ref} is not a fingerprint (an object of names and plain values)",
                        "make one with: pickfs env PATH --json FILE")
    return {str(k): str(v) for k, v in fp.items() if v is not None}


def names_a_file(ref: str) -> bool:
    """Does `ref` name a file rather than a run? A run id or prefix has no slash and no .json (pure)."""
    return os.sep in ref or ref.endswith(".json")


def _load(ref: str, workdir: str, results_path: Path | str | None) -> tuple[str, dict[str, str]]:
    """A fingerprint from a JSON file (`pickfs env --json`) or from a stored run."""
    p = Path(ref)
    if not os.path.lexists(p) and names_a_file(ref):
        raise PlanError(f"no such fingerprint file: {ref}", "check the path; make one with: pickfs env PATH --json FILE")
    if os.path.lexists(p):
        try:
            data = json.loads(read_small(p, MAX_FINGERPRINT, "fingerprint file").decode("utf-8"))
        except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, too deep, too large, not a file
            why = str(exc) if "fingerprint file" in str(exc) else f"{ref} is not a fingerprint"
            raise PlanError(why, "make one with: pickfs env PATH --json FILE") from None
        except OSError as exc:
            raise PlanError(f"fingerprint file {ref} cannot be read: {exc.strerror}", "check the path") from None
        return ref, fingerprint_of(data, ref)
    record = read_store(workdir, results_path).load(ref)
    fp = record.host.get("fingerprint")
    if not fp:
        raise NotFound(f"run {record.id} has no stored fingerprint", "it predates pickfs env; compare two JSON files")
    return f"run {record.id}", fingerprint_of(fp, f"run {record.id}'s stored fingerprint")


class _EnvCommand(click.Command):
    """`pickfs env [PATH]`; `pickfs env diff ...` is its own command, with its own --help."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        if args[:1] == ["diff"]:
            return diff_command.make_context(f"{info_name} diff", args[1:], parent=parent, **extra)
        return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        return ctx.command.invoke(ctx) if ctx.command is not self else super().invoke(ctx)


@click.command("diff", epilog=examples("pickfs env / --json dev.json             # on the dev box, then on the CI box",
                                       "pickfs env diff dev.json ci.json          # what differs, storage first",
                                       "pickfs env diff 20260101-0900-ab12 latest  # the machines of two runs"))
@click.argument("a")
@click.argument("b")
@workdir_option
@results_option
def diff_command(a: str, b: str, workdir: str, results_path: str | None) -> None:
    """What differs between two storage-stack fingerprints, the storage differences first.

    A and B are fingerprint files from `pickfs env PATH --json FILE` (say one from a dev box
    and one from a CI box) or run ids, whose fingerprints pickfs stores with every run.
    """
    (name_a, fa), (name_b, fb) = _load(a, workdir, results_path), _load(b, workdir, results_path)
    diffs = diff(fa, fb)
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


@click.command("env", cls=_EnvCommand,
               epilog=examples("pickfs env                               # the stack under /",
                               "pickfs env /var/lib/postgresql --json pg.json",
                               "pickfs env diff dev.json ci.json          # see: pickfs env diff --help"))
@click.argument("path", required=False)
@click.option("--json", "json_path", type=click.Path(path_type=Path), help="write the fingerprint as JSON ('-': stdout)")
@workdir_option
@results_option
def command(path: str | None, json_path: Path | None, workdir: str, results_path: str | None) -> None:
    """Fingerprint the storage stack under PATH (default /), or: env diff A B.

    The fingerprint names the filesystem, its mount and mkfs options, the block devices under it
    and their queues; `pickfs env diff A B` says what differs between two of them.
    """
    if path is not None and not os.path.exists(path):  # never the stack of a parent it was not asked about
        raise PlanError(f"{path} does not exist",
                       "name an existing directory: the one the database lives in, or the mount it will be made on")
    if json_path and str(json_path) != "-":
        check_target(json_path, "--json")  # before the fingerprint is taken: a path that cannot take it, said first
    fp = fingerprint(path or "/")
    if json_path:
        text = strict_json(fp, indent=1)
        if str(json_path) == "-":
            click.echo(text, nl=False)
            return
        write_export(json_path, text.encode(), "--json")
        console.info(f"fingerprint written to {json_path}")
    table = Table(title=f"storage stack under {fp['path']}", title_justify="left")
    table.add_column("setting")
    table.add_column("value")
    for k, v in fp.items():
        table.add_row(Text(k), Text(v))
    console.show(table)
