"""The `pickfs` command group and its error handling.

Ctrl-C while Python is still importing exits quietly (the handler below is installed before any
heavy import), and each command's module is imported only when that command runs: `pickfs --help`
and `pickfs results` never pay for scipy, plotly or the workload registry.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys

from pickfs.errors import EXIT_INTERRUPTED


def _quiet_interrupt(signum: int, frame: object) -> None:
    """SIGINT before any resource exists: nothing to undo, so exit at once, without a traceback."""
    os.write(2, b"error: interrupted\n")
    os._exit(EXIT_INTERRUPTED)


def _started_as_pickfs(argv0: str) -> bool:
    """Whether this process is the pickfs command (its script, or python -m pickfs), not a test importing it."""
    return os.path.basename(argv0) == "pickfs" or argv0.endswith(os.path.join("pickfs", "__main__.py"))


if _started_as_pickfs(sys.argv[0] if sys.argv else ""):
    signal.signal(signal.SIGINT, _quiet_interrupt)

import traceback  # noqa: E402 - after the SIGINT handler on purpose

import click  # noqa: E402

from pickfs import __version__  # noqa: E402
from pickfs.errors import EXIT_FAILED, PickfsError, cut_long_words  # noqa: E402
from pickfs.stack.signals import ignore_interrupts, install_interrupt, install_sigterm  # noqa: E402

# name -> (module that defines `command`, one-line summary shown by --help without importing it)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("pickfs.cli.run", "Build each configuration for real and run the workloads on it."),
    "crashtest": ("pickfs.cli.crashtest", "Record every write and flush of each configuration while a database "
                                          "commits, then rebuild the disk as a power cut could have left it."),
    "results": ("pickfs.cli.results", "List the saved runs, each with its answer."),
    "report": ("pickfs.cli.report", "Show a saved run (an id, a unique prefix, or 'latest')."),
    "compare": ("pickfs.cli.compare", "Two runs side by side: each run's answer first, then matching cells with B against A."),
    "env": ("pickfs.cli.env", "Fingerprint the storage stack under PATH (default /), or: env diff A B."),
    "cleanup": ("pickfs.cli.cleanup", "Unmount, detach and remove every resource left in the ledger by a pickfs "
                                      "that is gone."),
    "presets": ("pickfs.cli.presets", "List filesystem presets, their options, and what this machine lacks."),
    # --- fleet
    "fleet": ("pickfs.cli.fleet", "The same plan on many machines through Ansible: run, clean up, list."),
    "merge": ("pickfs.cli.merge", "Merge the runs of other results databases into this one; merging twice adds nothing."),
    # --- end fleet
    "search": ("pickfs.cli.search", "Race a space of filesystem, mkfs, mount, scheduler and database settings and answer "
                                     "with the fastest safe setup."),
    "plan": ("pickfs.cli.plan_check", "Check a plan file without running it: the matrix, what this machine lacks, "
                                      "and the time."),
}


def load_command(name: str) -> click.Command:
    """Import one command's module and return its click command."""
    module = importlib.import_module(COMMANDS[name][0])
    command: click.Command = module.command
    return command


def _short_help(command: click.Command, limit: int) -> str:
    """The one-line summary click shows for a command (its first sentence, cut to the limit)."""
    return command.get_short_help_str(limit)


class LazyGroup(click.Group):
    """A group whose commands are imported on demand; --help lists them from COMMANDS."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.add_command(load_command(cmd_name), cmd_name)
        # Imported: from here on Ctrl-C raises KeyboardInterrupt, so a command can undo what it built.
        # (Not before: a KeyboardInterrupt inside an extension module's import makes Python exit
        # through SIGINT, -2, even when it is caught.)
        install_interrupt()
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [(n, _short_help(click.Command(n, help=COMMANDS[n][1]) if n in COMMANDS else self.commands[n], limit))
                for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="\b\nExamples:\n  pickfs run                 # the default job: SQLite on every filesystem preset\n"
                    "  pickfs run --help          # its options, the workloads and examples\n"
                    "  pickfs crashtest --fs ext4,xfs\n  pickfs report --html report.html")
@click.version_option(__version__, prog_name="pickfs")
def cli() -> None:
    """Which storage setup should my database stand on? pickfs builds each candidate
    filesystem for real, runs database workloads on it, and compares them."""


def _error(text: str) -> None:
    from pickfs import console  # deferred: Rich, only when there is an error to print

    console.error(text)


def main(argv: list[str] | None = None) -> None:
    install_sigterm()
    try:
        _command(argv)
        code: int | str | None = 0
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:  # one more Ctrl-C while an error was being said: interrupted, without a traceback
        code = EXIT_INTERRUPTED
    if _started_as_pickfs(sys.argv[0] if sys.argv else ""):  # not in a test that calls main()
        ignore_interrupts()  # the result is said: a Ctrl-C while Python shuts down changes nothing
    if code:
        sys.exit(code)


def _command(argv: list[str] | None) -> None:
    """Run the command; every way it ends is a SystemExit with the exit code, or a return (0)."""
    try:
        cli.main(args=argv, prog_name="pickfs", standalone_mode=False)
    except click.exceptions.Abort:
        _error("interrupted")
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        ctx = getattr(exc, "ctx", None)
        _error(cut_long_words(exc.format_message()) + f" (see {ctx.command_path if ctx else 'pickfs'} --help)")
        sys.exit(exc.exit_code)
    except PickfsError as exc:
        _error(exc.one_line())
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _error("interrupted")
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:
        if os.environ.get("PICKFS_DEBUG"):
            traceback.print_exc()
        _error(cut_long_words(f"internal error: {type(exc).__name__}: {exc}") + " (rerun with PICKFS_DEBUG=1 for the traceback)")
        sys.exit(EXIT_FAILED)
