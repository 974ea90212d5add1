"""Ctrl-C and SIGTERM: interrupt the work, but never a teardown in progress."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C."""


def install_sigterm() -> None:
    def _raise(signum: int, frame: FrameType | None) -> None:
        raise Terminated()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise)


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
        raise KeyboardInterrupt()
