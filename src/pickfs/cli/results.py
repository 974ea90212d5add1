"""`pickfs results`: the runs in the results database, each with its answer; --json for scripts."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import click
from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table

from pickfs import console
from pickfs.cli.common import read_store, results_option, workdir_option
from pickfs.cli.examples import examples
from pickfs.engine.runlock import is_live
from pickfs.errors import PickfsError, PlanError, UntrustedPath
from pickfs.faults.document import Damaged, is_fault_run, stored_cells
from pickfs.faults.render import summary
from pickfs.report.json_text import strict_json
from pickfs.safepaths import check_target, write_export
from pickfs.store import ResultStore
from pickfs.store.results import RunSummaryRow, default_results_path

# workload label -> (the configuration its answer names, None: none, undecided; the answer in words, as `pickfs
# compare` says it: 'none (ext4 preferred, not settled)')
Answers = dict[str, tuple[str | None, str]]
STILL_RUNNING = "still running"
NOT_ASKED = "-"  # --no-answers


def answers(store: ResultStore, run: RunSummaryRow, workdir: Path, asked: bool = True) -> Answers | str:
    """What each measured workload of the run answers, by the analysis that every report draws (loads no plotly);
    or why there is none: the run is still being executed, cannot be read, or its answer was not asked for."""
    from pickfs.analysis.answer import answer_words, recommended  # deferred: the statistics, when asked for
    from pickfs.analysis.run import analyse  # deferred: the statistics, as above

    if run.status == "running" and is_live(workdir, run.id):
        return STILL_RUNNING
    if not asked:
        return NOT_ASKED
    try:
        record = store.load(run.id)
        if is_fault_run(record):  # a fault test names no configuration: what it found, in one line
            return summary(stored_cells(record))
        analysis = analyse(record)
    except PickfsError as exc:
        return f"cannot be read: {exc.message}"
    except Damaged as exc:
        return f"cannot be read: a damaged {exc}"
    return {v.label: (recommended(v), answer_words(v)) for v in analysis.views if v.measured}


def answer_text(run: RunSummaryRow, found: Answers | str) -> str:
    """The answer column: a line per workload of the plan, 'LABEL: NAME' ('none' when nothing is named: nothing
    safe measured, or 'none (ext4 preferred, not settled)' for a race that could not decide, as `pickfs compare`
    says it; '-' when it was not measured); or why there is none."""
    if isinstance(found, str):
        return found
    labels = [w for w in run.workloads.split(",") if w] or list(found)
    return "\n".join(f"{w}: {found[w][1]}" if w in found else f"{w}: -" for w in labels)


def measured_text(run: RunSummaryRow) -> str:
    """The results measured, and under them how many failed, if any."""
    return f"{run.trials_ok}\n{run.trials_failed} failed" if run.trials_failed else str(run.trials_ok)


def run_dict(run: RunSummaryRow, found: Answers | str) -> dict[str, object]:
    """A run for --json: its answer per measured workload (null while it is still running, or unreadable)."""
    return {"id": run.id, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(run.created)),
            "status": run.status, "live": found == STILL_RUNNING, "configs": run.configs,
            "workloads": run.workloads.split(",") if run.workloads else [], "measured": run.trials_ok,
            "failures": run.trials_failed, "answer": {w: named for w, (named, _) in found.items()} if isinstance(found, dict) else None}


GAP = 2  # between two columns
STARTED, STARTED_SHORT = 16, 10  # "2026-11-22 16:44"; the date, with the time under it


@dataclass(frozen=True)
class RunsTable:
    """The runs, each with its answer per workload, laid out for the width it is drawn at: the id is never cut
    (it is what a user copies); when the width is short the start time goes under its date and the answers
    wrap."""

    path: str
    rows: tuple[tuple[RunSummaryRow, Answers | str], ...]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        cells: list[tuple[str, ...]] = [(r.id, time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created)), r.status, str(r.configs),
                  measured_text(r), answer_text(r, found)) for r, found in self.rows]
        heads: tuple[str, ...] = ("run", "started", "status", "configs", "measured", "answer")
        if all(found == NOT_ASKED for _, found in self.rows):  # --no-answers: no column of dashes
            heads, cells = heads[:-1], [c[:-1] for c in cells]

        def widest(i: int) -> int:
            return max(len(heads[i]), *(len(line) for c in cells for line in c[i].splitlines()))

        fixed = widest(0) + widest(2) + widest(3) + widest(4) + GAP * (len(heads) - 1)
        wanted = widest(5) if len(heads) > 5 else 0
        started = STARTED if fixed + STARTED + wanted <= options.max_width else STARTED_SHORT
        # wider than the width (the id still whole) when even the shortest answer column does not fit
        answer = max(len(heads[5]), options.max_width - fixed - started) if wanted else 0
        if fixed + started + answer > options.max_width:
            options = options.update(width=fixed + started + answer)
        table = Table(title=f"runs in {self.path}", title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                      pad_edge=False, padding=(0, 1, 0, 0))  # the box's space and one: GAP
        table.add_column("run", no_wrap=True, width=widest(0))
        table.add_column("started", width=started)
        table.add_column("status", no_wrap=True, width=widest(2))
        table.add_column("configs", justify="right", width=widest(3))
        table.add_column("measured", justify="right", width=widest(4))
        if wanted:
            table.add_column("answer", overflow="fold", width=min(answer, wanted))
        for c in cells:
            table.add_row(*c)
        yield from console.render(table, options)


@click.command("results", epilog=examples('pickfs results',
         'pickfs results --results runs.db',
         'pickfs results --json - | jq -r \'.[] | select(.status == "complete") | .id\''))
@click.option("--no-answers", is_flag=True, help="list the runs without analysing each for its answer (at once, "
              "however many runs are stored)")
@click.option("--json", "json_path", type=click.Path(path_type=Path),
              help="write the runs as JSON ('-': stdout): id, started (UTC), status, configs, workloads, measured, "
                   "failures, answer (workload -> configuration)")
@workdir_option
@results_option
def command(no_answers: bool, json_path: Path | None, workdir: str, results_path: str | None) -> None:
    """List the saved runs, each with its answer: the configuration it names, per workload (each run analysed as
    `pickfs report` does, a few hundredths of a second a run; --no-answers lists without)."""
    if json_path is not None and str(json_path) != "-":
        try:
            check_target(json_path, "--json")  # before the runs are analysed: a path that cannot take them
        except UntrustedPath as exc:
            raise PlanError(exc.message, exc.hint) from None
    path = Path(results_path) if results_path else default_results_path(workdir)
    if not (results_path or os.environ.get("PICKFS_RESULTS")) and not os.path.lexists(path):
        rows: list[tuple[RunSummaryRow, Answers | str]] = []
        where: Path | str = path
    else:
        store = read_store(workdir, results_path)  # one named must exist
        rows = [(r, answers(store, r, Path(workdir), asked=not no_answers)) for r in store.list_runs()]
        where = store.path
    if json_path is not None:
        text = strict_json([run_dict(r, found) for r, found in rows])
        if str(json_path) == "-":
            click.echo(text, nl=False)
        else:
            write_export(json_path, text.encode(), "--json")
            console.info(f"json written to {json_path}")
        return
    if not rows:
        console.info(f"no runs yet in {where}; start one with: pickfs run")
        return
    console.show(RunsTable(str(where), tuple(rows)))
