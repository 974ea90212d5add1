"""`pickfs search`: race a space of filesystem, mkfs, mount, scheduler and database settings; answer with a setup."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import click

from pickfs import console
from pickfs.cli.common import ledger_for, open_store, require_root, results_option, workdir_option
from pickfs.cli.examples import examples
from pickfs.cli.report import check_export_targets
from pickfs.errors import EXIT_INTERRUPTED, PlanError
from pickfs.model import DEFAULT_MARGIN, WorkloadSpec
from pickfs.plan.flags import parse_max_time, workload_specs
from pickfs.plan.values import parse_share
from pickfs.report.search_json import render_json
from pickfs.report.search_text import render
from pickfs.risks import database_of
from pickfs.run_console import ProgressObserver
from pickfs.safepaths import write_export
from pickfs.search.design import screening
from pickfs.search.driver import MIN_STAGE_S, SearchResult, run_search
from pickfs.search.facts import gather
from pickfs.search.outcome import to_dict
from pickfs.search.presets import presets_not_raced, safe_presets
from pickfs.search.space import Space, built_in, from_table, prune
from pickfs.search.stages import SearchState, Setting, Stages, load_state, save_state
from pickfs.stack.signals import interrupted
from pickfs.store.results import new_run_id
from pickfs.units import parse_duration, parse_size
from pickfs.usecases.run import undo_orphans

DEFAULT_MAX_TIME = "30m"


def _space_table(o: dict[str, Any]) -> dict[str, Any]:
    """What the search covers: the plan file's [search] section, or the built-in spaces of --fs."""
    if o["plan_file"]:
        path = Path(o["plan_file"])
        try:
            data = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise PlanError(f"plan file {path} not found", "check the path") from None
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise PlanError(f"plan file {path} cannot be read: {exc}", "give a TOML file with a [search] section") \
                from None
        table = data.get("search")
        if not isinstance(table, dict):
            raise PlanError(f"plan file {path} has no [search] section",
                            'add one, e.g. [search] filesystems = ["ext4", "xfs"]')
        if o["fs"]:
            raise PlanError("--fs cannot be combined with --plan", "list the filesystems in the plan's [search] section")
        return {**table, **({"unsafe": True} if o["unsafe"] else {})}
    fs = [f.strip() for f in (o["fs"] or "ext4,xfs,btrfs").split(",") if f.strip()]
    if not fs:
        raise PlanError("--fs is empty", "e.g. --fs ext4,xfs, or leave it out for ext4, xfs and btrfs")
    built_in(fs)  # a clear error for a filesystem with no built-in space
    return {"filesystems": fs, "unsafe": bool(o["unsafe"])}


def new_request(o: dict[str, Any]) -> dict[str, Any]:
    spec = workload_specs((o["workload"],) if o["workload"] else (), o["sets"], None)[0]
    max_time = parse_max_time(o["max_time"] or DEFAULT_MAX_TIME)
    if max_time < 2 * MIN_STAGE_S:
        raise PlanError(f"--max-time {o['max_time']} leaves no room for the stages of a search",
                        f"give it at least {2 * MIN_STAGE_S / 60:.0f}m (a search races up to three stages; "
                        f"{DEFAULT_MAX_TIME} is the default)")
    return {
        "space": _space_table(o),
        "workload": {"name": spec.name, "label": spec.label, "settings": [list(kv) for kv in spec.settings]},
        "max_time_s": max_time,
        "sample": o["sample"] if o["sample"] is not None else 6,
        "seed": o["seed"] if o["seed"] is not None else 1,
        "margin": parse_share(o["margin"], "--margin", "--margin 5%", upper=0.5) if o["margin"] else DEFAULT_MARGIN,
        "size_bytes": parse_size(o["size"]) if o["size"] else None,
        "slice_s": parse_duration(o["slice"]) if o["slice"] else None,
        "presets": not o["no_presets"],
        "database_settings": True,  # a search recorded before database settings were searched resumes without
    }


def _spec(request: dict[str, Any]) -> WorkloadSpec:
    w = request["workload"]
    return WorkloadSpec(w["name"], w["label"], tuple((k, v) for k, v in w["settings"]))


def show_space(space: Space, sample: int, seed: int) -> None:
    allowed = sum(1 for c in space.candidates() if space.allowed(c))
    console.info(f"search space: {space.size()} configurations over {', '.join(f.fstype for f in space.filesystems)}, "
                 f"{allowed} allowed; the screening races {len(screening(space, sample, seed))} of them")
    for p in space.pruned:
        console.warn(f"pruned before anything runs: {p}")


@click.command("search", epilog=examples(
    "pickfs search                                  # sqlite-tpcb over ext4, xfs and btrfs settings, 30 min",
    "pickfs search --fs ext4,xfs --max-time 10m --json search.json",
    "pickfs search --plan space.toml --workload pgbench",
    "pickfs search --resume SEARCH_ID               # continue an interrupted search",
    "pickfs search --dry-run                        # the space, what is pruned and the screening; nothing built"))
@click.option("--plan", "plan_file", type=click.Path(path_type=Path),
              help="a TOML file whose [search] section declares the space (filesystems, unsafe, scheduler, "
                   "and [search.FSTYPE] tables of dimensions: name = [\"\", \"mount:noatime\", \"mkfs:-J size=256\"])")
@click.option("--fs", help="filesystems whose built-in spaces to search, comma-separated [ext4,xfs,btrfs]")
@click.option("--workload", help="the workload the search measures [sqlite-tpcb]")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="a workload setting, e.g. synchronous=FULL")
@click.option("--max-time", help=f"the whole search's time budget, setup included, e.g. 10m [{DEFAULT_MAX_TIME}]")
@click.option("--sample", type=int, help="random configurations added to the screening's one-at-a-time design [6]")
@click.option("--unsafe", is_flag=True, help="also search settings that can lose data on a power cut (nobarrier, synchronous=NORMAL, "
                                              "data=writeback); left out by default")
@click.option("--no-presets", is_flag=True, help="leave the safe presets out of the final race")
@click.option("--margin", help="the smallest difference worth recommending over the default, e.g. 5% [5%]")
@click.option("--size", help="image size, e.g. 4G [sized to the workload's data]")
@click.option("--slice", help="length of one slice, e.g. 1s [the workload's own]")
@click.option("--seed", type=int, help="seed of the screening's random sample and the rounds' order [1]")
@click.option("--json", "json_path", type=click.Path(path_type=Path), help="also write the result as JSON to this file ('-': stdout)")
@click.option("--resume", help="continue an interrupted search (its id), keeping everything measured")
@click.option("--dry-run", is_flag=True, help="show the space, what this machine lacks and the screening; build nothing")
@workdir_option
@results_option
def command(**o: Any) -> None:
    """Race a space of filesystem, mkfs, mount, scheduler and database settings and answer with the fastest safe setup.

    Screening (every value changed alone from each filesystem's defaults, plus a random sample), then the
    values that helped combined around the leaders, then the leaders against the distribution's default
    and the safe presets: each stage a race of real filesystems, every slice saved.
    """
    check_export_targets({"json": o["json_path"]})  # before anything runs: a path that cannot take the answer
    if o["resume"]:
        state = load_state(o["workdir"], o["resume"])
    else:
        state = SearchState(new_run_id(), new_request(o))
    request = state.request
    spec = _spec(request)
    space = from_table(request["space"], spec if request.get("database_settings") else None, database_of(spec))
    if o["dry_run"]:
        show_space(prune(space, gather(space)), request["sample"], request["seed"])
        return
    require_root("building filesystems (losetup, mkfs, mount)", "run as root (sudo)")
    space = prune(space, gather(space))
    show_space(space, request["sample"], request["seed"])
    store = open_store(o["workdir"], o["results_path"])
    ledger = ledger_for(o["workdir"])
    undo_orphans(ledger, console.warn)
    save_state(o["workdir"], state)
    setting = Setting(o["workdir"], spec, request["margin"], request["seed"], request["size_bytes"], request["slice_s"])
    console.info(f"search {state.id}: {spec.label}, at most {request['max_time_s'] / 60:.0f} min; "
                 f"continue an interrupted one with: pickfs search --resume {state.id}")
    result = _search(space, setting, store, ledger, state, request, o["workdir"])
    d = to_dict(state.id, result, spec, database_of(spec), request,
                presets_not_raced() if request["presets"] else ())
    if o["json_path"] and str(o["json_path"]) == "-":  # standard output is the JSON's alone (a script reads it)
        click.echo(render_json(d), nl=False)
    else:
        console.show(render(d))
    if o["json_path"] and str(o["json_path"]) != "-":
        write_export(o["json_path"], render_json(d).encode(), "--json")
        console.info(f"wrote {o['json_path']}")
    console.info(f"each stage is a run in {store.path}: pickfs report RUN shows one in full")


def _search(space: Space, setting: Setting, store: Any, ledger: Any, state: SearchState, request: dict[str, Any],
            workdir: str) -> SearchResult:
    with console.progress() as bar:
        observer = ProgressObserver(bar)
        stages = Stages(setting, store, ledger, observer, state, observer.note)
        try:
            return run_search(space, stages, request["max_time_s"], request["seed"], request["sample"],
                              safe_presets() if request["presets"] else ())
        except BaseException as exc:
            if not interrupted(exc):
                raise
            bar.stop()
            console.error(f"search {state.id} interrupted: every slice measured is kept; continue with: "
                          f"pickfs search --resume {state.id}" + f" --workdir {workdir}")
            raise SystemExit(EXIT_INTERRUPTED) from None
