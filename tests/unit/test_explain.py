from pickfs.analysis.explain import explain, process_group, wait_shares, write_shares
from pickfs.model import Trial
from pickfs.stats.anomalies import outliers


def trial(monitor, metrics):
    return Trial(run_id="r", cell_index=0, repetition=0, phase="measured", started=0.0, elapsed_s=4.0, ok=True,
                 metrics=metrics, monitor=monitor)


MONITOR = {
    "totals": {"elapsed_s": 4.0, "disk": "loop3", "disk_write_bytes": 100 * 1024**2, "disk_writes": 20000,
               "disk_flushes": 8000, "disk_busy_s": 2.0, "cpu_iowait_share": 0.38, "cpu_user_share": 0.1,
               "cpu_system_share": 0.2, "psi_some_share": 0.5},
    "processes": [{"pid": 10, "comm": "jbd2/loop3-8", "read_bytes": 0, "write_bytes": 30 * 1024**2},
                  {"pid": 11, "comm": "kworker/u8:2-loop3", "read_bytes": 0, "write_bytes": 10 * 1024**2}],
    "io_waiting": [{"comm": "jbd2/loop3-8", "share": 0.61}, {"comm": "pickfs-sqlite", "share": 0.4},
                   {"comm": "kworker/u8:9-loop3", "share": 0.2}, {"comm": "kworker/u8:2-loop3", "share": 0.3}],
}
METRICS = {"transactions": 4000.0, "client_wchar": 50 * 1024**2, "client_write_bytes": 60 * 1024**2}


def test_process_groups_survive_across_runs():
    assert process_group("jbd2/loop3-8") == "jbd2 (ext4 journal)"
    assert process_group("kworker/u8:11-writeback") == "kworker (writeback)"
    assert process_group("kworker/u8:9-loop0") == "kworker (loop)"
    assert process_group("kworker/u8:2+loop0") == "kworker (loop)"
    assert process_group("xfsaild/loop2") == "xfsaild (xfs log)"


def test_explanation_lines():
    lines = explain([trial(MONITOR, METRICS), trial(MONITOR, METRICS)])
    text = "\n".join(lines)
    assert "loop3 wrote 100.0 MiB in 20,000 writes and 8,000 flushes: 2.00 flushes and 25.6 KiB per transaction" in text
    assert "busy 50% of the time" in text
    assert "write amplification 2.0x" in text
    assert "CPU waited on disk 38% of the time" in text and "stalled on I/O 50%" in text
    # the loop device's worker writes one layer down, into the image file: not counted
    assert "wrote the most: workload client 67%, jbd2 (ext4 journal) 33%" in text
    assert "jbd2 (ext4 journal) 61%, workload client 40%, kworker (loop) 30%" in text


def test_shares_are_means_over_runs():
    quiet = {"totals": {"elapsed_s": 4.0}, "processes": [], "io_waiting": []}
    shares = dict(wait_shares([trial(MONITOR, {}), trial(quiet, {})]))
    assert shares["jbd2 (ext4 journal)"] == 0.305
    assert dict(write_shares([trial(MONITOR, {})])) == {"jbd2 (ext4 journal)": 1.0}


def test_no_monitor_no_explanation():
    assert explain([trial({}, METRICS)]) == []


def test_outliers_by_modified_z_score():
    assert outliers([100, 101, 99, 100, 160]) == [4]
    assert outliers([100, 120, 90, 110, 95]) == []
    assert outliers([1, 2, 3]) == []
    # two of five far from the median: spread (a disk with two speeds), not outliers
    assert outliers([17437, 10888, 17565, 11035, 17600]) == []


def test_a_busy_client_is_named():
    lines = explain([trial(MONITOR, {**METRICS, "client_cpu_share": 0.93})])
    assert any("client used 0.93 CPUs" in line for line in lines)
    assert not any("client used" in line for line in explain([trial(MONITOR, {**METRICS, "client_cpu_share": 0.3})]))



def test_processes_the_run_reaped_count_as_the_client_once():
    from pickfs.model import CHILDREN

    procs = [{"pid": 1, "comm": CHILDREN, "write_bytes": 300, "read_bytes": 0},
             {"pid": 2, "comm": "jbd2/loop0-8", "write_bytes": 100, "read_bytes": 0}]
    fio_like = trial({"processes": procs}, {})
    assert dict(write_shares([fio_like])) == {"workload client": 0.75, "jbd2 (ext4 journal)": 0.25}
    # a client that counted its own writes: the same bytes are not added twice
    sqlite_like = trial({"processes": procs}, {"client_write_bytes": 100.0})
    assert dict(write_shares([sqlite_like])) == {"workload client": 0.5, "jbd2 (ext4 journal)": 0.5}


def test_flushes_are_named_for_every_kind_of_workload():
    """A command or a file tree has no transactions: flushes in all and per second; fio: per sync call."""
    command = explain([trial(MONITOR, {"elapsed_s": 4.0, "cpu_s": 1.0})])
    assert "loop3 wrote 100.0 MiB in 20,000 writes and 8,000 flushes: 2,000.0 flushes per second" in command[0]
    fio = explain([trial(MONITOR, {"iops": 1000.0, "syncs_per_s": 500.0})])
    assert "8,000 flushes: 4.00 flushes per sync call" in fio[0]
    plain = explain([trial(MONITOR, {"iops": 1000.0})])
    assert "2.000 flushes per I/O" in plain[0]
    none = {**MONITOR, "totals": {**MONITOR["totals"], "disk_flushes": 0}}
    assert "and 0 flushes: 0.0 flushes per second" in explain([trial(none, {"elapsed_s": 4.0})])[0]


def test_journal_share_from_the_device_counters():
    """jbd2's /proc/<pid>/io says 0: its share comes from the journal's own counter, named as such."""
    mon = {**MONITOR, "totals": {**MONITOR["totals"], "journal": "jbd2 (ext4 journal)",
                                 "journal_write_bytes": 40 * 1024**2},
           "processes": [{"pid": 10, "comm": "jbd2/loop3-8", "read_bytes": 0, "write_bytes": 0},
                         {"pid": 12, "comm": "mariadbd", "read_bytes": 0, "write_bytes": 60 * 1024**2}]}
    text = "\n".join(explain([trial(mon, {"elapsed_s": 4.0})]))
    assert "jbd2 (ext4 journal) wrote 40.0 MiB, 40% of what reached the device (from /proc/fs/jbd2" in text
    assert "wrote the most: mariadbd 60%, jbd2 (ext4 journal) 40%" in text


def test_other_activity_is_apart_and_a_warning():
    mon = {**MONITOR, "other_processes": [{"pid": 99, "comm": "postgres", "read_bytes": 0, "write_bytes": 12 * 1024**2}],
           "io_waiting_other": [{"comm": "jbd2/loop9-8", "share": 0.3}]}
    lines = explain([trial(mon, METRICS)])
    writers = next(line for line in lines if line.startswith("wrote the most"))
    assert "postgres" not in writers
    other = lines[-1]
    assert other.startswith("other activity on this machine, not this cell's (the machine was not quiet)")
    assert "postgres 12.0 MiB" in other and "jbd2 (ext4 journal) 30%" in other
    quiet = {**MONITOR, "other_processes": [{"pid": 99, "comm": "bash", "read_bytes": 0, "write_bytes": 4096}],
             "io_waiting_other": [{"comm": "bash", "share": 0.01}]}
    assert not any(line.startswith("other activity") for line in explain([trial(quiet, METRICS)]))
