"""The one place that prints: Rich console, verbosity, NO_COLOR, non-interactive in CI."""

from __future__ import annotations

import os
import sys

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

NO_TERMINAL_WIDTH = 160  # with no terminal at all (a log, cron) and no COLUMNS


def output_width(environ: dict[str, str] | None = None) -> int | None:
    """The width the report is laid out for: COLUMNS when set (also when piped), else the terminal's (None: Rich
    asks stdin, stdout and stderr), else NO_TERMINAL_WIDTH."""
    env = os.environ if environ is None else environ
    columns = env.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    for stream in (sys.stdout, sys.stderr, sys.stdin):
        try:
            if stream is not None and os.isatty(stream.fileno()):
                return None
        except (AttributeError, OSError, ValueError):
            continue
    return NO_TERMINAL_WIDTH


# markup off: what is shown comes from plans and results files (a name "[/b]" is text, never markup)
_out = Console(soft_wrap=False, markup=False, width=output_width())
_err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def interactive() -> bool:
    return _err.is_terminal and not os.environ.get("CI")


def show(renderable: RenderableType) -> None:
    _out.print(renderable)


def plain(text: str) -> None:
    """A line for scripts on standard output: no markup, no colour, no wrapping."""
    _out.print(text, markup=False, highlight=False, soft_wrap=True)


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
