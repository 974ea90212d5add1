"""The `pickfs` command group and its error handling."""

from __future__ import annotations

import os
import sys
import traceback

import click

from pickfs import __version__, console
from pickfs.errors import EXIT_FAILED, EXIT_INTERRUPTED, PickfsError
from pickfs.stack.signals import install_sigterm


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pickfs")
def cli() -> None:
    """Which storage setup should my database stand on? pickfs builds each candidate
    filesystem for real, runs database workloads on it, and compares them."""


def _register() -> None:
    from pickfs.cli import cleanup, compare, crashtest, env, presets, report, results, run

    for module in (run, crashtest, results, report, compare, env, cleanup, presets):
        cli.add_command(module.command)


def main(argv: list[str] | None = None) -> None:
    _register()
    install_sigterm()
    try:
        cli.main(args=argv, prog_name="pickfs", standalone_mode=False)
    except click.exceptions.Abort:
        console.error("interrupted")
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        console.error(exc.format_message() + " (see pickfs --help)")
        sys.exit(exc.exit_code)
    except PickfsError as exc:
        console.error(exc.one_line())
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        console.error("interrupted")
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:  # noqa: BLE001 - a bug: one line, the traceback on request
        if os.environ.get("PICKFS_DEBUG"):
            traceback.print_exc()
        console.error(f"internal error: {type(exc).__name__}: {exc} (rerun with PICKFS_DEBUG=1 for the traceback)")
        sys.exit(EXIT_FAILED)
