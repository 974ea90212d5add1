"""Errors that reach the user as one line: what went wrong, and the fix."""

from __future__ import annotations

# Every command's exit codes, documented in docs/usage.md ("Exit codes"): one table every command follows.
EXIT_FAILED = 1  # the work started and gave no result (a run where nothing measured, a tool that failed, internal)
EXIT_USAGE = 2  # refused before anything was done: bad input, an untrusted or unconfirmed target, no root
EXIT_CANNOT_RUN = 3  # the plan is valid, but this machine lacks what every cell of it needs: nothing was built
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM: what was measured is kept, to resume

LONGEST_WORD = 200  # characters of one word of an error shown whole; a longer one (a pasted file, a runaway key) is cut


def cut_long_words(text: str) -> str:
    """Each word longer than LONGEST_WORD cut to its start, an ellipsis and its length (pure): an error echoes what
    it was given, and 100,000 characters of it hide the error."""
    return " ".join(w if len(w) <= LONGEST_WORD else f"{w[:60]}… ({len(w):,} characters)" for w in text.split(" "))


class PickfsError(Exception):
    """Base error. `hint` names the fix; the CLI prints `error: message (hint)`."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        text = self.message.strip().replace("\n", " ")
        return cut_long_words(f"{text} ({self.hint})" if self.hint else text)


class PlanError(PickfsError):
    """The plan or a flag is invalid."""

    exit_code = EXIT_USAGE


class ToolMissing(PickfsError):
    """An external program pickfs needs is not installed."""


class NeedsRoot(PickfsError):
    """The requested action needs root: refused before anything is done, as bad input is."""

    exit_code = EXIT_USAGE


class UnsafeTarget(PickfsError):
    """A device or path that pickfs refuses to touch."""


class CommandFailed(PickfsError):
    """An external program exited non-zero; its stderr is part of the message."""

    def __init__(self, argv: list[str], returncode: int, stderr: str, hint: str = "") -> None:
        tail = " | ".join(line.strip() for line in stderr.strip().splitlines()[-3:] if line.strip())
        super().__init__(f"{' '.join(argv)} exited {returncode}: {tail or 'no output'}", hint)
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr


class ConfigUnavailable(PickfsError):
    """A configuration cannot be built on this machine (kernel or tool missing)."""


class NothingCanRun(PickfsError):
    """Every cell of a valid plan needs something this machine lacks (a server, a tool, a kernel module)."""

    exit_code = EXIT_CANNOT_RUN


class NotFound(PickfsError):
    """A run or resource named by the user does not exist: bad input, refused."""

    exit_code = EXIT_USAGE


class ResultsUnusable(PickfsError):
    """The results database is not one pickfs can use (not SQLite, damaged, another program's, newer)."""

    exit_code = EXIT_USAGE


class ResultsWriteFailed(PickfsError):
    """The results database could not be written (disk full, I/O error, read-only filesystem)."""


class UntrustedWorkdir(PickfsError):
    """The work directory (or its ledger) is not pickfs's own: pickfs will not trust or use it."""

    exit_code = EXIT_USAGE


class UntrustedPath(PickfsError):
    """A path pickfs would write to goes through another user's symbolic link, or names a directory that is
    not pickfs's own: pickfs will not write there."""

    exit_code = EXIT_USAGE


class NotUndone(PickfsError):
    """A ledger entry names something pickfs cannot prove it made; it is left alone."""

    exit_code = EXIT_USAGE


class NoRoom(PickfsError):
    """The host filesystem under the work directory cannot hold the images the plan needs."""

    exit_code = EXIT_USAGE


class ProcessesLeft(PickfsError):
    """A started program's control group still holds processes pickfs could not end: it is left in the ledger."""
