"""fio at a fixed rate: its schedule rebuilt and each I/O measured from its due time, on fio output captured on
this machine (fio 3.33: tests/data/fio-rate-*.json), and the accounting of what was due."""

import json
from pathlib import Path

import pytest

from pickfs.errors import PlanError
from pickfs.workloads import workload_class
from pickfs.workloads.fio import rate_block
from pickfs.workloads.fio_rate import (
    JobRate,
    due_times_us,
    fixed_rate_block,
    job_seeds,
    parse_lat_log,
    split_rate,
)

DATA = Path(__file__).parent.parent / "data"
Fileio = workload_class("fileio")


def doc(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def first(n: int, times) -> list[int]:
    return [next(times) for _ in range(n)]


def test_the_poisson_schedule_is_fios_own():
    # fio 3.33, randread at rate_iops=200, rate_process=poisson, randrepeat on (job 1): the I/Os it logged
    # first completed at 0, 11, 14, 15, 20 and 39 ms (each taking microseconds on tmpfs): its due times
    dues = first(6, due_times_us(200, "poisson", job_seeds(1)[15]))
    assert dues == [0, 11726, 14105, 15652, 20959, 39731]


def test_the_uniform_schedule_is_k_over_the_rate():
    assert first(4, due_times_us(400, "uniform", 0)) == [0, 2500, 5000, 7500]
    with pytest.raises(ValueError):
        next(due_times_us(0, "poisson", 1))


@pytest.mark.parametrize("name", ["fio-rate-write-poisson.json", "fio-rate-read-uniform.json"])
def test_every_io_of_a_real_run_completes_after_its_rebuilt_due_time(name):
    d = doc(name)
    block = rate_block(d)
    assert block == d["fixed_rate"]  # derived again from the kept log, the same figures
    assert block["due"] == block["done"] + block["unfinished"]
    # every I/O logged is counted, but one fio issued as its runtime ended (due at or after it)
    assert 0 <= len(parse_lat_log(d["lat_log"])) - block["done"] <= 1
    assert 0.8 * block["offered"] * block["window_s"] <= block["due"] <= 1.2 * block["offered"] * block["window_s"]
    assert sum(block["latency_us"].values()) == block["done"]


def test_a_schedule_that_is_not_fios_is_refused():
    d = doc("fio-rate-write-poisson.json")
    p = d["pacing"]
    with pytest.raises(ValueError, match="could not be rebuilt"):  # job 2's seeds: not the schedule fio followed
        fixed_rate_block({2: d["lat_log"]}, [JobRate(2, split_rate(p["rate"], 0.0, 1))], "poisson",
                         p["runtime_us"], 1)


def test_latency_from_the_schedule_shows_what_fios_own_figures_hide():
    d = doc("fio-rate-write-poisson.json")
    m = Fileio.parse(json.dumps(d))
    # direct writes on a busy disk: I/Os queued behind slow ones count their wait from the schedule
    assert m["sched_p99"] > m["write_p99"]
    assert m["offered_rate"] == 400.0 and 0 < m["late_share"] < 1 and m["skipped_share"] == 0.0
    assert 0 <= m["client_cpu_share"] < 1


def test_a_stall_counts_against_every_io_it_held_up():
    # 100 I/Os due 10 ms apart (uniform); the 11th takes 200 ms, and fio issues the ones due meanwhile back to back
    lines, clock_us = [], 0
    for k in range(100):
        due = k * 10_000
        start = max(due, clock_us)
        lat = 200_000 if k == 10 else 100
        clock_us = start + lat
        lines.append(f"{clock_us // 1000}, {lat * 1000}, 1, 4096, 0")
    block = fixed_rate_block({1: "\n".join(lines)}, [JobRate(1, {1: 100})], "uniform", 1_000_000, 1)
    hist = {int(k): v for k, v in block["latency_us"].items()}
    from_schedule = sorted(k for k, v in hist.items() for _ in range(v))
    assert from_schedule[98] >= 100_000  # the p99 from the schedule carries the stall
    assert sorted(int(k) for k in block["service_us"])[0] == 100  # fio's own latency: 100 us for all but one
    assert block["late"] >= 15 and block["due"] == 100 and block["unfinished"] == 0


def test_ios_due_but_not_done_by_the_runtime_are_unfinished():
    lines = [f"{k * 10}, 100000, 0, 4096, 0" for k in range(50)]  # 50 of the 100 due in 1 s were done
    block = fixed_rate_block({1: "\n".join(lines)}, [JobRate(1, {0: 100})], "uniform", 1_000_000, 1)
    assert (block["due"], block["done"], block["unfinished"]) == (100, 50, 50)


def test_the_rate_is_split_into_fios_whole_rates():
    assert split_rate(500, 1.0, 1) == {0: 500}
    assert split_rate(500, 0.0, 1) == {1: 500}
    assert split_rate(500.4, 0.0, 1) == {1: 500}
    with pytest.raises(ValueError):
        split_rate(0.5, 1.0, 1)


def test_the_job_file_paces_fio_and_keeps_its_per_io_log():
    from pickfs.model import WorkloadSpec

    s = Fileio.normalize({"read_share": 0, "fsync_every": 0, "rate": "300/s", "arrivals": "uniform"})
    spec = WorkloadSpec("fileio", "fileio", tuple(sorted({**s, "lat_log_dir": "/x"}.items())))
    job = Fileio().measured_job(spec, Path("/mnt"))
    assert "rate_iops=,300\n" in job and "rate_process=linear\n" in job
    assert "write_lat_log=/x/lat\n" in job and "log_avg_msec=0\n" in job


@pytest.mark.parametrize("settings, words", [
    ({"rate": 100}, "not a mix"),
    ({"rate": 100, "read_share": 1}, "cannot sync every few writes"),
    ({"rate": 100, "read_share": 1, "fsync_every": 0, "threads": 2}, "one fio job"),
    ({"rate": 100, "read_share": 1, "fsync_every": 0, "latency_limit": "50ms"}, "cannot skip"),
    ({"arrivals": "uniform"}, "needs a fixed rate"),
])
def test_what_fio_cannot_pace_is_refused_with_the_fix(settings, words):
    with pytest.raises(PlanError, match=words):
        Fileio.normalize(settings)


def test_closed_loop_settings_are_as_before():
    assert "rate" not in Fileio.normalize({}) and "rate_iops" not in Fileio().measured_job(
        __import__("pickfs.model", fromlist=["WorkloadSpec"]).WorkloadSpec(
            "fileio", "fileio", tuple(sorted(Fileio.normalize({}).items()))), Path("/mnt"))


def test_the_io_fio_issues_early_as_its_runtime_ends_is_not_a_mismatch():
    # fio 3.33 at 50/s for 1 s (captured): its last I/O was due at 1,036 ms, after the runtime; fio slept only
    # up to the runtime and issued it then, completing at 1,000 ms: not counted, and not a sign of a wrong schedule
    lines = [f"{due // 1000}, 150000, 1, 16384, 0" for due in first(63, due_times_us(50, "poisson", job_seeds(1)[17]))]
    lines.append("1000, 107105, 1, 16384, 0")
    block = fixed_rate_block({1: "\n".join(lines)}, [JobRate(1, {1: 50})], "poisson", 1_000_000, 1)
    assert block["done"] == 63 == block["due"]
