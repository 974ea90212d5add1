"""The controller's side of a fleet run: the plan checked, pickfs shipped, Ansible driven, every host's
results fetched and merged into the local store with the host's name, and a host's failure kept apart."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from pickfs.errors import PickfsError, PlanError
from pickfs.fleet import package, playbooks
from pickfs.fleet.ansible import Event, Playbook, run_to_end
from pickfs.fleet.inventory import InventoryHost, list_hosts, local_inventory
from pickfs.model import Plan, plan_to_dict
from pickfs.plan import load_plan_file
from pickfs.stack.targets import target_kind
from pickfs.stack.workdir import prepare, private_dir
from pickfs.store.fleets import FleetHost, FleetRecord, new_fleet_id
from pickfs.store.merge import merge_runs
from pickfs.store.results import ResultStore

CONFIRM_VAR = "pickfs_confirm_device"
START_TASK, POLL_TASK, FETCH_TASK, OUTCOME_TASK = "start the plan", "progress", "fetch the results", "the outcome"


class FleetObserver(Protocol):
    def host(self, name: str, text: str) -> None: ...

    def note(self, text: str) -> None: ...


def device_problem(plan: Plan, host: InventoryHost) -> str | None:
    """A device target runs on a host only when the inventory confirms that host's exact device (pure)."""
    if not target_kind(plan.target).erases:
        return None
    confirm = host.vars.get(CONFIRM_VAR)
    if not confirm:
        return (f"the plan erases {plan.target.device} and the inventory does not confirm it for {host.name}: "
                f"set {CONFIRM_VAR}={plan.target.device} for this host")
    if confirm != plan.target.device:
        return f"{CONFIRM_VAR}={confirm} for {host.name} is not the plan's device {plan.target.device}"
    return None


def fleet_status(hosts: list[FleetHost] | tuple[FleetHost, ...]) -> str:
    done = [h for h in hosts if h.status == "complete"]
    if len(done) == len(hosts):
        return "complete"
    if any(h.status == "interrupted" for h in hosts):
        return "interrupted"
    return "partial" if done else "failed"


class FleetController:
    def __init__(self, store: ResultStore, workdir: str, inventory: str, limit: str | None, observer: FleetObserver,
                 forks: int = 10, poll_s: float = 5.0, timeout_s: float = 6 * 3600.0, stop_wait_s: float = 120.0):
        self.store, self.workdir, self.inventory, self.limit = store, workdir, inventory, limit
        self.observer, self.forks, self.poll_s, self.timeout_s, self.stop_wait_s = (observer, forks, poll_s,
                                                                                    timeout_s, stop_wait_s)
        self.base = private_dir(prepare(workdir) / "fleet", 0o700)  # the controller's own, checked as pickfs's

    # -- a fleet run -------------------------------------------------------------------------
    def run(self, plan_file: Path | None, resume: str | None = None) -> FleetRecord:
        self.inventory_hosts = list_hosts(self.inventory, self.limit)
        inventory_hosts = {h.name: h for h in self.inventory_hosts}
        if resume:
            record = self.store.load_fleet(resume)
            fleet_id = record.id
            hosts = {h.name: h for h in record.hosts}
            todo = [n for n, h in hosts.items() if h.status != "complete" and n in inventory_hosts]
            if not todo:
                self.observer.note(f"every host of {fleet_id} in this inventory is complete: nothing to resume")
                return record
            work = private_dir(self.base / fleet_id, 0o700)  # made again (and checked) if it is gone
            plan_copy = work / "plan.toml"
            if not plan_copy.is_file():
                raise PlanError(f"fleet {fleet_id} cannot be resumed: its copy of the plan, {plan_copy}, is gone",
                                "start a new fleet run: pickfs fleet run --inventory HOSTS --plan PLAN.toml")
            plan = load_plan_file(plan_copy)
            for n in list(todo):  # the inventory may have changed since: each host's device confirmed again
                problem = device_problem(plan, inventory_hosts[n])
                if problem:
                    hosts[n] = replace(hosts[n], status="failed", error=problem)
                    todo.remove(n)
        else:
            if plan_file is None:
                raise PlanError("a fleet run needs a plan", "pickfs fleet run --inventory HOSTS --plan PLAN.toml")
            plan = load_plan_file(plan_file)
            if target_kind(plan.target).erases and plan.target.confirm:
                raise PlanError("a fleet plan does not confirm its device in [target]",
                                f"drop confirm from the plan; confirm each host's device with {CONFIRM_VAR} in the "
                                "inventory")
            fleet_id = new_fleet_id()
            work = private_dir(self.base / fleet_id, 0o700)
            plan_copy = work / "plan.toml"
            shutil.copyfile(plan_file, plan_copy)
            hosts = {n: FleetHost(n) for n in inventory_hosts}
            for n, inv_host in inventory_hosts.items():
                problem = device_problem(plan, inv_host)
                if problem:
                    hosts[n] = FleetHost(n, "failed", error=problem)
            record_plan = {**plan_to_dict(plan), "file": plan_file.name}
            self.store.create_fleet(fleet_id, record_plan, str(Path(self.inventory).resolve()), list(hosts.values()))
            todo = [n for n, h in hosts.items() if h.status == "pending"]
        self.fleet_id, self.work, self.hosts, self.resuming = fleet_id, work, hosts, bool(resume)
        for n, h in hosts.items():
            if h.status == "failed" and n not in todo:
                self.observer.host(n, f"refused: {h.error}")
        if todo:
            try:
                self._run_hosts(todo, plan_copy)
            except BaseException as exc:
                self._end_early(todo, exc)
                raise
        status = fleet_status(list(self.hosts.values()))
        self.store.update_fleet(fleet_id, status, list(self.hosts.values()))
        return self.store.load_fleet(fleet_id)

    def _end_early(self, todo: list[str], exc: BaseException) -> None:
        """Ctrl-C or an error before the hosts ran (the wheel build) or while they did: never left 'running'."""
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        why = "interrupted on the controller" if status == "interrupted" else f"the controller failed: {exc}"[:300]
        for n in todo:
            if self.hosts[n].status in ("running", "pending"):
                self.hosts[n] = replace(self.hosts[n], status=status, error=why)
        try:
            self.store.update_fleet(self.fleet_id, status, list(self.hosts.values()))
        except (PickfsError, OSError):
            pass  # the results file is what failed: the error itself is reported

    def _run_hosts(self, todo: list[str], plan_copy: Path) -> None:
        shipment = package.build(self.base / "dist")
        self.observer.note(f"fleet {self.fleet_id}: {len(todo)} host(s); pickfs {shipment.wheel} and its "
                           f"dependencies shipped from {shipment.wheels}")
        (self.work / "run.json").write_text(playbooks.run_playbook())
        vars_file = self.work / "vars.json"
        # the host's job keeps its own time limit (and undoes what it built); Ansible's, later, is the backstop
        async_s = int(self.timeout_s + self.stop_wait_s + 60)
        vars_file.write_text(playbooks.extra_vars(
            fleet_id=self.fleet_id, local_dir=str(self.work / "hosts"), wheels_dir=str(shipment.wheels),
            wheel=shipment.wheel, tree_hash=shipment.tree_hash, plan_path=str(plan_copy),
            job_timeout=int(self.timeout_s), async_timeout=async_s, stop_wait=int(self.stop_wait_s),
            poll_delay=max(1, int(self.poll_s)), poll_retries=int(async_s / max(1, int(self.poll_s))) + 1,
            resume="yes" if self.resuming else "no"))
        for n in todo:
            self.hosts[n] = replace(self.hosts[n], status="running", error="")
        self.store.update_fleet(self.fleet_id, "running", list(self.hosts.values()))
        self.started: dict[str, float] = {}
        self.progress: dict[str, str] = {}
        pb = Playbook(self.work / "run.json", self._inventories(self.work), todo, vars_file, self.work, self.forks)
        try:
            run_to_end(pb, self._on_event)
        except KeyboardInterrupt:
            pb.stop()
            self.observer.note("interrupted: stopping the plan on every host and undoing what it built")
            self._stop(todo, fetch=True)
            for n in todo:
                if self.hosts[n].status in ("running", "pending"):
                    self.hosts[n] = replace(self.hosts[n], status="interrupted", error="interrupted on the controller")
            self._merge(todo)
            self.store.update_fleet(self.fleet_id, "interrupted", list(self.hosts.values()))
            raise
        for n in todo:
            if self.hosts[n].status == "running":  # the playbook ended without a word on this host
                self.hosts[n] = replace(self.hosts[n], status="failed", error="Ansible ended before the host did")
        self._merge(todo)

    def _on_event(self, e: Event) -> None:
        if e.kind == "output":
            if e.text and not e.text.startswith("[WARNING]: Platform"):
                self.observer.note(f"ansible: {e.text}")
            return
        if not e.host or e.host not in self.hosts:
            return
        h = self.hosts[e.host]
        if e.kind == "ok":
            if e.task == START_TASK:
                self.started[e.host] = time.time()
                self.observer.host(e.host, "plan started (an async job)")
            elif e.task == POLL_TASK:
                st = _json(e.result.get("stdout"))
                state = st.get("state")
                h = replace(h, run_id=st.get("run_id"), job_s=st.get("job_s"))
                if state != "complete":
                    h = replace(h, status="interrupted" if state == "interrupted" else "failed",
                                error=st.get("error") or f"the plan ended {state}")
                self.hosts[e.host] = h
                self.observer.host(e.host, f"plan ended: {state}" + (f": {h.error}" if h.error else ""))
            elif e.task == FETCH_TASK:
                if e.host in self.started:
                    self.hosts[e.host] = replace(self.hosts[e.host], wall_s=time.time() - self.started[e.host])
                if self.hosts[e.host].status == "running":
                    self.hosts[e.host] = replace(self.hosts[e.host], status="complete")
                self.observer.host(e.host, "results fetched")
            elif e.task in (OUTCOME_TASK, "prepare the job"):
                pass
            else:
                self.observer.host(e.host, e.task + (" (changed)" if e.result.get("changed") else ""))
        elif e.kind == "retry" and e.task == POLL_TASK:
            st = _json(e.result.get("stdout"))
            line = st.get("progress") or st.get("state") or ""
            if line and line != self.progress.get(e.host):
                self.progress[e.host] = line
                self.observer.host(e.host, line)
        elif e.kind in ("failed", "unreachable") and e.task != OUTCOME_TASK:  # the outcome: known from the poll
            status = "unreachable" if e.kind == "unreachable" else "failed"
            error = f"{e.task}: {e.message()}"
            self.hosts[e.host] = replace(self.hosts[e.host], status=status, error=error)
            self.observer.host(e.host, f"{status}: {error}")

    def _merge(self, names: list[str]) -> None:
        """Each host's fetched results into the local store; the host's run is the one made for this fleet."""
        for n in names:
            db = self.work / "hosts" / n / "results.db"
            if not db.is_file():
                continue
            try:
                source = ResultStore.read_only(db)  # a fetched file: read, never written (nor its -wal made)
                try:  # only this fleet's runs: the host's file is not trusted to hold nothing else
                    hosts = {r.id: source.load(r.id).host for r in source.list_runs()}
                    mine = [i for i, h in hosts.items() if isinstance(h, dict) and h.get("fleet") == self.fleet_id]
                    result = merge_runs(self.store, source, run_ids=mine)
                finally:
                    source.close()
            except (PickfsError, ValueError, TypeError) as exc:
                error = exc.one_line() if isinstance(exc, PickfsError) else str(exc).splitlines()[0] if str(exc) \
                    else type(exc).__name__
                error = f"its results could not be merged: {error}"
                self.hosts[n] = replace(self.hosts[n], status="failed", error=error)
                self.observer.host(n, error)
                continue
            if mine:
                self.hosts[n] = replace(self.hosts[n], run_id=mine[-1])
            self.observer.host(n, f"merged: {len(result.runs_added)} new run(s), {result.trials_added} trial(s)")

    # -- stopping and cleaning up ------------------------------------------------------------------
    def _stop(self, names: list[str], fetch: bool) -> dict[str, str]:
        """Stop pickfs on these hosts, undo what it built, fetch what it measured; a host's problem by name."""
        work = getattr(self, "work", None) or private_dir(self.base / "cleanup", 0o700)
        one_job = getattr(self, "fleet_id", None) is not None  # a fleet's Ctrl-C stops its own job only
        (work / "stop.json").write_text(playbooks.stop_playbook(fetch, one_job=one_job))
        vars_file = work / "stop-vars.json"
        vars_file.write_text(playbooks.extra_vars(fleet_id=getattr(self, "fleet_id", "none"),
                                                  local_dir=str(work / "hosts"), stop_wait=int(self.stop_wait_s)))
        problems: dict[str, str] = {}

        def on_event(e: Event) -> None:
            if e.kind in ("failed", "unreachable") and e.host:
                problems[e.host] = f"{e.task}: {e.message()}"
                self.observer.host(e.host, f"cleanup {e.kind}: {e.message()}")
            elif e.kind == "ok" and e.host and e.task in ("stop the plan", "undo what is left"):
                self.observer.host(e.host, e.task + (": done" if e.result.get("changed") else ": nothing to do"))

        pb = Playbook(work / "stop.json", self._inventories(work), names, vars_file, work, self.forks)
        try:
            run_to_end(pb, on_event)
        except KeyboardInterrupt:
            pb.stop()  # a second Ctrl-C: give up waiting; `pickfs fleet cleanup` finishes the job
            raise
        return problems

    def cleanup(self) -> dict[str, str]:
        self.inventory_hosts = list_hosts(self.inventory, self.limit)
        return self._stop([h.name for h in self.inventory_hosts], fetch=False)

    def _inventories(self, work: Path) -> list[str]:
        """The user's inventory, and pickfs's own for its hosts on the local connection (their Python)."""
        local = local_inventory(self.inventory_hosts, work / "local-hosts.json")
        return [self.inventory, *([str(local)] if local else [])]


def _json(text: object) -> dict[str, Any]:
    try:
        doc = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}
