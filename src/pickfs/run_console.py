"""A run as the terminal shows it, for `pickfs run` and a fleet host's job log alike: warnings and notes, a
progress bar with the time left (lines instead when not interactive), one line per measured run."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.progress import Progress, TaskID
from rich.text import Text

from pickfs import console
from pickfs.engine.executor import Observer
from pickfs.engine.schedule import Slot
from pickfs.model import Trial
from pickfs.report.text import fmt_with_unit
from pickfs.workloads import REGISTRY


class ConsoleEvents:
    """The use case's events (usecases/run.py RunEvents) on the console."""

    def warn(self, text: str) -> None:
        console.warn(text)

    def info(self, text: str) -> None:
        console.info(text)

    def error(self, text: str) -> None:
        console.error(text)

    @contextmanager
    def measuring(self) -> Iterator[Observer]:
        with console.progress() as bar:
            yield ProgressObserver(bar)


class ProgressObserver:
    """Progress bar with time left, and one line per measured run."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task: TaskID | None = None  # the bar's current task
        self.done = 0
        self.count = 0
        self.rounds_t0 = 0.0

    def started(self, slots: list[Slot], estimate_s: float) -> None:
        self.count = len(slots)
        self.task = self.progress.add_task("starting", total=max(estimate_s, 1.0))
        console.info(f"{len(slots)} trials to run, about {estimate_s / 60:.0f} min")

    def slot_started(self, slot: Slot) -> None:
        self.progress.update(self._task(), description=f"[{self.done + 1}/{self.count}] {slot.cell.key}")

    def trial_saved(self, slot: Slot, trial: Trial) -> None:
        if trial.phase != "measured":
            return
        metric = REGISTRY[slot.cell.workload.name].primary()
        value = trial.metrics.get(metric.name)
        self.progress.console.print(
            f"  {slot.cell.key} run {slot.repetition + 1}: {fmt_with_unit(value, metric)}",
            highlight=False)

    def slot_finished(self, slot: Slot, estimate_s: float) -> None:
        self.done += 1
        self.progress.advance(self._task(), estimate_s)

    def reestimate(self, remaining_s: float) -> None:
        """The time left, corrected by what the slots so far took."""
        task = self.progress.tasks[self._task()]
        self.progress.update(self._task(), total=max(task.completed + remaining_s, 1.0))

    def extend(self, estimate_s: float) -> None:
        """The stopping rule added a repetition."""
        self.count += 1
        total = self.progress.tasks[self._task()].total or 0.0
        self.progress.update(self._task(), total=total + estimate_s)

    def note(self, text: str) -> None:
        self.progress.console.print(Text.assemble(("note: ", "yellow"), text), highlight=False)

    def rounds_started(self, label: str, budget_s: float, blocks: int | None, configs: int) -> None:
        self.rounds_t0 = time.monotonic()
        self.task = self.progress.add_task(f"{label}: side by side", total=max(budget_s, 1.0))
        times = "as many times as fit a fifth of the time" if blocks is None else f"{blocks} time(s)"
        most = f"{budget_s / 60:.0f} min" if budget_s >= 90 else f"{budget_s:.0f} s"
        console.info(f"{label}: {configs} configurations side by side, each built {times} on fresh "
                     f"filesystems, at most {most}")

    def round_finished(self, label: str, block: int, round_no: int, widest: float | None) -> None:
        elapsed = time.monotonic() - self.rounds_t0
        width = "not yet known" if widest is None or widest > 1 else f"±{widest:.1%}"
        self.progress.update(self._task(), completed=elapsed,
                             description=f"{label}: round {round_no}, widest interval {width}")
        if not console.interactive():
            console.info(f"  {label} round {round_no}: widest interval {width} ({elapsed:.0f} s)")

    def _task(self) -> TaskID:
        assert self.task is not None, "the engine calls started or rounds_started first"
        return self.task
