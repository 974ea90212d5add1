"""`pickfs fleet run|cleanup|list`: the same plan on many machines through Ansible, results merged here."""

from __future__ import annotations

import time
from pathlib import Path

import click
from rich.table import Table

from pickfs import console
from pickfs.cli.common import open_store, results_option, workdir_option
from pickfs.cli.examples import examples
from pickfs.errors import EXIT_INTERRUPTED, PickfsError, PlanError
from pickfs.safepaths import write_export
from pickfs.store import ResultStore
from pickfs.store.fleets import FleetRecord
from pickfs.units import parse_duration

inventory_option = click.option(
    "--inventory", "-i", required=True,
    help="an Ansible inventory (INI or YAML; groups and host variables as Ansible has them)")
limit_option = click.option("--limit", "-l", help="only these hosts or groups (Ansible's --limit pattern)")


class ConsoleObserver:
    """One line per host event: what each host is doing, as it happens."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def host(self, name: str, text: str) -> None:
        console.info(f"[{name}] {text} (+{time.monotonic() - self.t0:.0f} s)")

    def note(self, text: str) -> None:
        console.info(text)


def hosts_table(record: FleetRecord) -> Table:
    table = Table(title=f"fleet {record.id}: {record.status}", title_justify="left")
    for col in ("host", "status", "run", "on the host", "host total", "error"):
        table.add_column(col)
    for h in record.hosts:
        table.add_row(h.name, h.status, h.run_id or "-", f"{h.job_s:.0f} s" if h.job_s else "-",
                      f"{h.wall_s:.0f} s" if h.wall_s else "-", h.error)
    return table


@click.group("fleet", epilog=examples('pickfs fleet run -i hosts.ini --plan examples/r2-postgresql.toml',
         'pickfs fleet list',
         'pickfs fleet cleanup -i hosts.ini'))
def command() -> None:
    """The same plan on many machines through Ansible: run, clean up, list."""


@command.command("run", epilog=examples('pickfs fleet run -i hosts.ini --plan examples/r2-postgresql.toml',
         'pickfs fleet run -i hosts.ini --plan plan.toml --limit db --timeout 2h',
         'pickfs fleet run -i hosts.ini --resume FLEET_ID  # the hosts that did not complete'))
@inventory_option
@click.option("--plan", "plan_file", type=click.Path(path_type=Path), help="the plan (TOML) every host runs")
@limit_option
@click.option("--forks", type=click.IntRange(1, 500), default=10, show_default=True,
              help="hosts Ansible works on at once")
@click.option("--poll", default="5s", show_default=True, help="how often each host's job is polled")
@click.option("--timeout", default="6h", show_default=True, help="the longest a host's job may run")
@click.option("--resume", help="a fleet run to continue: only its hosts that did not complete run again")
@workdir_option
@results_option
def run(inventory: str, plan_file: Path | None, limit: str | None, forks: int, poll: str, timeout: str,
        resume: str | None, workdir: str, results_path: str | None) -> None:
    """Ship pickfs to every host, run the plan on each in parallel, fetch and merge the results."""
    from pickfs.fleet.controller import FleetController  # deferred: numpy/scipy via the engine and its plan

    if bool(plan_file) == bool(resume):
        raise PlanError("give either --plan (a new fleet run) or --resume FLEET", "pickfs fleet run -i HOSTS --plan P")
    store = open_store(workdir, results_path)
    controller = FleetController(store, workdir, inventory, limit, ConsoleObserver(), forks=forks,
                                 poll_s=parse_duration(poll), timeout_s=parse_duration(timeout))
    t0 = time.monotonic()
    try:
        record = controller.run(plan_file, resume)
    except KeyboardInterrupt:
        fleet_id = getattr(controller, "fleet_id", None)
        if fleet_id:
            console.show(hosts_table(store.load_fleet(fleet_id)))
            console.error(f"interrupted: what was measured is kept; continue with: pickfs fleet run -i {inventory} "
                          f"--resume {fleet_id}")
        else:
            console.error("interrupted")
        raise SystemExit(EXIT_INTERRUPTED) from None
    console.show(hosts_table(record))
    console.info(f"fleet {record.id} took {time.monotonic() - t0:.0f} s; compare the machines with: "
                 f"pickfs report {record.id}")
    if record.status != "complete":
        failed = [h.name for h in record.hosts if h.status != "complete"]
        raise PickfsError(f"{len(failed)} of {len(record.hosts)} host(s) did not complete: {', '.join(failed)}",
                          "the others' runs are kept; see the errors above, then pickfs fleet run --resume "
                          f"{record.id}")


@command.command("cleanup", epilog=examples('pickfs fleet cleanup -i hosts.ini',
         'pickfs fleet cleanup -i hosts.ini --limit db1'))
@inventory_option
@limit_option
@workdir_option
def cleanup(inventory: str, limit: str | None, workdir: str) -> None:
    """Stop pickfs on each host and undo what it left there (after a controller was killed)."""
    from pickfs.fleet.controller import FleetController  # deferred: numpy/scipy via the engine and its plan

    controller = FleetController(None, workdir, inventory, limit, ConsoleObserver())  # type: ignore[arg-type]
    problems = controller.cleanup()
    if problems:
        raise PickfsError(f"{len(problems)} host(s) not cleaned up: " +
                          "; ".join(f"{h}: {p}" for h, p in problems.items()), "see the lines above, then rerun")
    console.info("every host is clean")


@command.command("list", epilog=examples('pickfs fleet list',
         'pickfs report FLEET_ID --html fleet.html   # one fleet run compared'))
@workdir_option
@results_option
def list_fleets(workdir: str, results_path: str | None) -> None:
    """The fleet runs in the results database."""
    store = open_store(workdir, results_path, read_only=True)
    fleets = store.list_fleets()
    if not fleets:
        console.info(f"no fleet runs in {store.path}; start one with: pickfs fleet run -i HOSTS --plan PLAN")
        return
    table = Table(title=f"fleet runs in {store.path}", title_justify="left")
    for col in ("fleet", "started", "status", "hosts", "complete"):
        table.add_column(col)
    for f in fleets:
        table.add_row(f.id, time.strftime("%Y-%m-%d %H:%M", time.localtime(f.created)), f.status, str(len(f.hosts)),
                      str(sum(h.status == "complete" for h in f.hosts)))
    console.show(table)


def report_fleet(store: ResultStore, ref: str, targets: dict[str, Path | None]) -> None:
    """`pickfs report FLEET`: the hosts' runs side by side; --html a page with heat maps, --json the same data."""
    from pickfs.report.fleet import (  # deferred: numpy/scipy via stats, for `report FLEET` only
        build_fleet_view,
        render_fleet,
        render_fleet_html,
        render_fleet_json,
    )

    fleet = store.load_fleet(ref)
    records = {h.name: store.load(h.run_id) for h in fleet.hosts if h.run_id and h.run_id in store.run_ids()}
    view = build_fleet_view(fleet, records)
    renderers = {"html": render_fleet_html, "json": render_fleet_json}
    unsupported = [f"--{fmt}" for fmt, path in targets.items() if path is not None and fmt not in renderers]
    if unsupported:
        raise PlanError(f"{', '.join(unsupported)} is not available for a fleet run",
                        "use --html or --json, or report each host's run by its id")
    if not any(str(p) == "-" for p in targets.values() if p):
        console.show(render_fleet(view))
    for fmt, path in targets.items():
        if path is None:
            continue
        text = renderers[fmt](view)
        if str(path) == "-":
            click.echo(text, nl=False)
        else:
            write_export(path, text.encode(), f"--{fmt}")
            console.info(f"{fmt} written to {path}")
