"""`pickfs env [PATH]` and `pickfs env diff A B`: the storage stack's fingerprint, and what differs."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from pickfs import console
from pickfs.cli.common import open_store, results_option, workdir_option
from pickfs.errors import NotFound, PlanError
from pickfs.fingerprint import fingerprint
from pickfs.report.envdiff import diff
from pickfs.safepaths import write_file


def _load(ref: str, workdir: str, results_path: Path | None) -> tuple[str, dict[str, str]]:
    """A fingerprint from a JSON file (`pickfs env --json`) or from a stored run."""
    p = Path(ref)
    if p.is_file():
        try:
            data = json.loads(p.read_text())
        except json.JSONDecodeError:
            raise PlanError(f"{ref} is not a fingerprint", "make one with: pickfs env PATH --json FILE") from None
        return ref, data.get("fingerprint", data)
    record = open_store(workdir, results_path, read_only=True).load(ref)
    fp = record.host.get("fingerprint")
    if not fp:
        raise NotFound(f"run {record.id} has no stored fingerprint", "it predates pickfs env; compare two JSON files")
    return f"run {record.id}", fp


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
            table.add_row(Text("storage", style="bold yellow") if d.storage else Text(""), d.key,
                          d.a if d.a is not None else "(absent)", d.b if d.b is not None else "(absent)")
        console.show(table)
        return
    if len(args) > 1:
        raise PlanError("env takes one path", "pickfs env /var/lib/postgresql, or pickfs env diff A B")
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
