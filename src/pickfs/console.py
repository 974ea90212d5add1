"""The one place that prints: Rich console, verbosity, NO_COLOR, non-interactive in CI."""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

# markup off: what is shown comes from plans and results files (a name "[/b]" is text, never markup)
_out = Console(soft_wrap=False, markup=False, width=None if sys.stdout.isatty() else 160)
_err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def interactive() -> bool:
    return _err.is_terminal and not os.environ.get("CI")


def show(renderable) -> None:
    _out.print(renderable)


def info(text: str) -> None:
    _err.print(escape(text), highlight=False, soft_wrap=True)


def warn(text: str) -> None:
    _err.print(f"[yellow]warning:[/yellow] {escape(text)}", highlight=False, soft_wrap=True)


def error(text: str) -> None:
    _err.print(f"[bold red]error:[/bold red] {escape(text)}", highlight=False, soft_wrap=True)


def progress() -> Progress:
    return Progress(
        TextColumn("{task.description}", markup=False),  # names from plans and results files: text
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("elapsed"),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=_err,
        disable=not interactive(),
        transient=False,
    )
