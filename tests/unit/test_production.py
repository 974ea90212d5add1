"""Pure parts of issue 13: memory groups, aging measures, sizing, scale, the clients dimension, scaling report."""

import io
import random
import time

import pytest
from rich.console import Console

from pickfs.analysis.run import analyse
from pickfs.engine.standup import data_against_memory, follow_memory
from pickfs.errors import PlanError
from pickfs.model import FsConfig, Method, Plan, RunRecord, Target, Trial, WorkloadSpec, plan_from_dict, plan_to_dict
from pickfs.plan import (
    build_plan,
    expand_clients,
    parse_clients,
    parse_plan_text,
    parse_scale,
    resolve_fs_name,
    sized_image,
)
from pickfs.report.scaling import scaling_data, scaling_html, scaling_text
from pickfs.services.firebird import config_text
from pickfs.services.mariadb import MariaDB
from pickfs.services.postgresql import PostgreSQL
from pickfs.stack.aging import file_sizes
from pickfs.stack.cgroups import cgroup_refusal, choose_hierarchy, limit_files, parse_proc_cgroup
from pickfs.stack.filesystems import parse_e2freefrag, parse_xfs_freesp
from pickfs.workloads import workload_class

GIB = 1024**3
V1 = "9:name=systemd:/\n4:memory:/process_api/abc\n3:cpuset:/\n0::/\n"
V2 = "0::/user.slice/session-1.scope\n"


def spec(name: str, **settings) -> WorkloadSpec:
    return WorkloadSpec(name, name, tuple(sorted(workload_class(name).normalize(settings).items())))


def test_the_memory_hierarchy_is_v1_where_mounted_else_v2():
    assert parse_proc_cgroup(V1)["memory"] == "/process_api/abc"
    h = choose_hierarchy(V1, v1_memory=True, v2_controllers="")
    assert h is not None and h.version == 1 and h.parent == "/process_api/abc" and h.own == h.parent
    h = choose_hierarchy(V2, v1_memory=False, v2_controllers="cpuset cpu io memory pids")
    assert h is not None and h.version == 2 and h.parent == "/" and h.own == "/user.slice/session-1.scope"
    assert choose_hierarchy(V2, v1_memory=False, v2_controllers="cpu io") is None
    assert limit_files(1, 5) == [("memory.limit_in_bytes", "5"), ("memory.memsw.limit_in_bytes", "5")]
    assert limit_files(2, 5) == [("memory.max", "5"), ("memory.swap.max", "0")]


@pytest.mark.parametrize("path,ok", [("/sys/fs/cgroup/memory/x/pickfs-abc", True), ("/sys/fs/cgroup/pickfs-1", True),
                                     ("/sys/fs/cgroup/memory/user", False), ("/tmp/pickfs-a", False),
                                     ("/sys/fs/cgroup/memory/../../tmp/pickfs-a", False), (None, False)])
def test_only_pickfs_groups_under_sys_fs_cgroup_are_undone(path, ok):
    assert (cgroup_refusal(path) is None) == ok


def test_server_buffers_follow_the_memory_unless_set():
    pg = PostgreSQL.memory_settings(GIB)
    assert pg == {"shared_buffers": "256MB"}
    settings, notes = follow_memory({"shared_buffers": "128MB"}, pg, {"shared_buffers": "128MB"})
    assert settings["shared_buffers"] == "256MB" and "following the memory limit" in notes[0]
    settings, notes = follow_memory({"shared_buffers": "512MB"}, pg, {"shared_buffers": "128MB"})
    assert settings["shared_buffers"] == "512MB" and notes == []
    settings, _ = follow_memory({"innodb_buffer_pool_size": None}, MariaDB.memory_settings(GIB), {})
    assert settings["innodb_buffer_pool_size"] == "512M"
    assert "2.0x: larger than memory" in data_against_memory(2 * GIB, GIB)
    assert "fits in memory" in data_against_memory(GIB // 2, GIB)


def test_images_are_sized_to_the_job():
    assert sized_image(3 * GIB, None, 4 * GIB) == 4 * GIB
    assert sized_image(int(3.6 * GIB), None, 4 * GIB) == 5 * GIB
    assert sized_image(GIB, 0.7, 4 * GIB) == 7 * GIB  # an aging's 70% beside the data
    plan = build_plan(Target(size_auto=True), [resolve_fs_name("ext4")], [spec("tree")], Method(), None)
    assert plan.target.size_bytes >= 5 * GIB
    with pytest.raises(PlanError, match="needs about"):
        build_plan(Target(size_bytes=2 * GIB), [resolve_fs_name("ext4")], [spec("bigfiles")], Method(), None)


def test_scale_grows_the_data_past_the_memory():
    target = Target(size_auto=True, memory_bytes=GIB, scale=parse_scale("2x"))
    plan = build_plan(target, [resolve_fs_name("ext4")], [spec("fileio"), spec("pgbench"), spec("tree")], Method(),
                      None)
    fileio, pgbench, tree = plan.workloads
    assert fileio.get("size") == 2 * GIB
    assert 130 <= pgbench.get("scale") <= 140
    assert any("scale does not apply to tree" in w for w in plan.warnings)
    with pytest.raises(PlanError, match="no memory is set"):
        build_plan(Target(scale=2.0), [resolve_fs_name("ext4")], [spec("fileio")], Method(), None)
    for bad in ("0", "x", True, "200"):
        with pytest.raises(PlanError):
            parse_scale(bad)


def test_aging_settings_round_trip_and_count_as_a_difference():
    from pickfs.plan import config_from_table, setting_differences

    aged = config_from_table({"name": "ext4-aged", "fs": "ext4", "age": "70%", "age_rounds": 4}, 0)
    assert (aged.age, aged.age_rounds, aged.age_seed) == (0.7, 4, 1)
    assert setting_differences(aged, resolve_fs_name("ext4")) == ["aged fresh -> 70% (4 rounds, seed 1)"]
    plan = build_plan(Target(size_auto=True), [aged], [spec("sqlite-tpcb")], Method(), None)
    assert plan_from_dict(plan_to_dict(plan)).configs[0] == aged
    for bad in ({"age": "95%"}, {"age": "x"}, {"age": "50%", "age_rounds": 0}, {"age": 0.5, "age_seed": "a"}):
        with pytest.raises(PlanError):
            config_from_table({"fs": "ext4", **bad}, 0)


def test_file_population_and_fragmentation_tools_output():
    sizes = file_sizes(random.Random(1), 2000)
    assert sizes == file_sizes(random.Random(1), 2000)  # the same seed, the same population
    assert min(sizes) >= 512 and max(sizes) <= 64 * 1024**2
    assert 20_000 < sorted(sizes)[1000] < 120_000  # median near 48 KiB
    assert parse_e2freefrag("Device: /dev/loop1\nNum. free extent: 704\n") == 704
    assert parse_xfs_freesp("   from      to extents  blocks    pct\ntotal free extents 516\n") == 516
    assert parse_e2freefrag("garbage") is None and parse_xfs_freesp("") is None


def test_the_clients_dimension():
    assert parse_clients("1,2,4") == (1, 2, 4) and parse_clients([1, 2, 2, 8]) == (1, 2, 8)
    for bad in ("", "0", "a", [1.5], True):
        with pytest.raises(PlanError):
            parse_clients(bad)
    out, warnings = expand_clients([spec("pgbench"), spec("sysbench-oltp"), spec("sqlite-tpcb")], (1, 4))
    assert [w.label for w in out] == ["pgbench-c1", "pgbench-c4", "sysbench-oltp-c1", "sysbench-oltp-c4",
                                      "sqlite-tpcb"]
    assert out[0].get("clients") == 1 and out[0].get("threads") == 1 and out[3].get("threads") == 4
    assert warnings == ["clients does not apply to sqlite-tpcb: it has no client count"]
    with pytest.raises(PlanError, match="embedded engine takes one client"):
        expand_clients([spec("tpcc", backend="firebird", clients=1)], (2,))
    assert "clients" in parse_plan_text("clients = [1, 2]\n")


def _record() -> RunRecord:
    configs = (FsConfig("ext4", "ext4"), FsConfig("xfs", "xfs"))
    specs = tuple(WorkloadSpec("pgbench", f"pgbench-c{n}", (("clients", n),)) for n in (1, 2, 4))
    plan = plan_to_dict(Plan(Target(), configs, specs, Method(runs=3, warmup=0)))
    for w in plan["workloads"]:
        w.update(metrics=[{"name": "tps", "unit": "tx/s", "higher_is_better": True},
                          {"name": "lat_p99", "unit": "s", "higher_is_better": False}],
                 kind="database", database="postgresql", risks=[])
    for c in plan["configs"]:
        c["risks"] = []
    trials = []
    for wi, n in enumerate((1, 2, 4)):
        for ci, base in enumerate((100.0, 80.0)):
            for rep in range(3):
                tps = base * min(n, 2 if ci else 4) + rep
                trials.append(Trial(run_id="r", cell_index=wi * 2 + ci, repetition=rep, phase="measured", started=time.time(), elapsed_s=1.0, ok=True,
                                    metrics={"tps": tps, "lat_p99": 0.001 * n}))
    return RunRecord("r", 0.0, 0.0, "complete", "0", plan, {}, (), tuple(trials))


def test_scaling_chart_data_table_and_svg():
    views = analyse(_record()).views  # the scaling is read from the analysed run, never the stored plan again
    (s,) = scaling_data(views)
    assert s.label == "pgbench" and s.counts() == [1, 2, 4] and s.configs() == ["ext4", "xfs"]
    xfs = {p.clients: p.throughput for p in s.points if p.config == "xfs"}
    assert xfs == {1: 81.0, 2: 161.0, 4: 161.0}  # xfs stops scaling at 2 clients
    assert {p.p99 for p in s.points if p.clients == 4} == {0.004}
    text = scaling_text([s])
    assert "pgbench: tps (tx/s)" in text and "4 clients" in text
    assert text.splitlines()[-1].split()[-1] == "2"  # xfs is best at 2 (the first count reaching its peak)
    page = scaling_html([s])
    assert page.count("<svg") == 1 and page.count("<polyline") == 4
    assert scaling_html([]) == "" and scaling_data(views[:1]) == []  # one client count: no scaling


def test_scaling_is_in_every_format_that_draws_sections():
    # the concurrency section was drawn by the terminal and HTML only; it is a section of every format now
    from pickfs.report.html import render_html
    from pickfs.report.json_export import run_to_dict
    from pickfs.report.markdown import render_markdown
    from pickfs.report.terminal import render_run

    run = analyse(_record())
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(render_run(run))
    assert "pgbench: tps (tx/s) / p99 latency" in console.export_text()
    assert "pgbench: scaling with clients" in render_markdown(run)
    assert "pgbench: scaling with clients" in render_html(run, plotly=None)
    (doc,) = run_to_dict(run)["scaling"]
    assert doc["workload"] == "pgbench" and {p["clients"] for p in doc["points"]} == {1, 2, 4}


def test_firebird_server_configuration_listens_on_the_loopback_only(tmp_path):
    text = config_text(30555, tmp_path / "security3.fdb", {"firebird_cache_pages": "8192"})
    assert "RemoteBindAddress = 127.0.0.1" in text and "RemoteServicePort = 30555" in text
    assert "ServerMode = SuperClassic" in text and "DefaultDbCachePages = 8192" in text
    assert f"SecurityDatabase = {tmp_path}/security3.fdb" in text
