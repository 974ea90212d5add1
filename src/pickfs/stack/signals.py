"""Ctrl-C and SIGTERM: interrupt the work, but never a teardown in progress.

A signal's handler raises KeyboardInterrupt (Terminated for SIGTERM) wherever the main thread is, and
Python drops an exception raised in a few places: a handler that runs inside an at-fork hook (while
`subprocess` starts a program) or a finalizer only prints "Exception ignored". So each signal is also
noted, and `check_interrupt` raises it again at the points where work begins (a resource recorded in
the ledger, a slice): a Ctrl-C that arrived at an unlucky instant still ends the run.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C."""


_received: list[int] = []  # SIGINT/SIGTERM noted by pickfs's handlers: the work must end


def _as_exception(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise _as_exception(signum)


def install_sigterm() -> None:
    """SIGTERM raises Terminated (noted, so that it is not lost)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)


def install_interrupt() -> None:
    """Ctrl-C raises KeyboardInterrupt (noted, so that it is not lost) and SIGTERM raises Terminated."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _interrupt)
    install_sigterm()


def check_interrupt() -> None:
    """Raise again a Ctrl-C or SIGTERM that came in, in case the exception raised for it was dropped."""
    if _received:
        raise _as_exception(_received[-1])


def ignore_interrupts() -> None:
    """The work is over and its result said: from here SIGINT and SIGTERM are ignored while the process exits.

    Python runs its handlers while it shuts down (joining threads, exit hooks), where a KeyboardInterrupt
    only prints "Exception ignored in: <module 'threading'>" and a traceback, and later resets them to
    the default action, which kills the process (-2) after its result was shown. Ignored signals stay
    ignored through both. A signal already pending raises here once (handled by `signal.signal` before it
    changes the handler); it is then ignored too: the result stands."""
    try:
        _ignore()
    except KeyboardInterrupt:
        _ignore()


def _ignore() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


@contextmanager
def shielded() -> Iterator[None]:
    """Defer SIGINT/SIGTERM while undoing resources; re-raise after if one came in."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def _note(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    old_int = signal.signal(signal.SIGINT, _note)
    old_term = signal.signal(signal.SIGTERM, _note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
    if received:
        raise _as_exception(received[-1])


def interrupted(exc: BaseException | None) -> bool:
    """A KeyboardInterrupt, or an error raised while handling one (a teardown step that failed)."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__context__
        seen += 1
    return False
