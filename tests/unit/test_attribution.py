from pickfs.monitors.attribution import Scope, belongs, own_processes, serves_device
from pickfs.monitors.procfs import parse_jbd2_info, parse_stat_fields, parse_xfs_log

# pid -> parent: 1 init; 2 kthreadd; 100 pickfs; 101 its client; 102 the command's child;
# 200 this cell's server (below pickfs), 201 its worker; 300 a neighbour's server (below pickfs), 301 its
# worker; 400 another pickfs run's postgres (not below this pickfs); 10-13 kernel threads
PPIDS = {1: 0, 2: 0, 100: 1, 101: 100, 102: 101, 200: 100, 201: 200, 300: 100, 301: 300, 400: 1,
         10: 2, 11: 2, 12: 2, 13: 2}
SCOPE = Scope(disk="loop3", major_minor="7:3", fstype="ext4", roots=(100, 200), foreign=(300,))


def test_own_processes_are_below_pickfs_and_the_server_but_not_below_a_neighbour():
    assert own_processes(PPIDS, SCOPE) == {100, 101, 102, 200, 201}


def test_a_daemonised_server_is_own_through_its_pid():
    ppids = {**PPIDS, 200: 1}  # pg_ctl's postmaster is re-parented to init
    assert 201 in own_processes(ppids, SCOPE)
    assert 201 not in own_processes(ppids, Scope(roots=(100,)))


def test_kernel_threads_by_the_device_they_serve():
    own = own_processes(PPIDS, SCOPE)
    assert belongs(10, 2, "jbd2/loop3-8", own, SCOPE)
    assert belongs(11, 2, "kworker/u8:2-loop3", own, SCOPE)
    assert not belongs(12, 2, "jbd2/loop31-8", own, SCOPE)
    assert not belongs(13, 2, "kworker/u8:1-events_unbound", own, SCOPE)
    assert serves_device("kworker/u8:0-flush-7:3", SCOPE) and not serves_device("kworker/u8:0-flush-7:30", SCOPE)
    assert serves_device("xfsaild/loop3", SCOPE) and serves_device("kworker/1:1-xfs-cil/loop3", SCOPE)
    assert not serves_device("btrfs-transaction", SCOPE)
    assert serves_device("btrfs-transaction", Scope(disk="loop3", fstype="btrfs"))
    assert serves_device("kworker/u8:3-btrfs-endio-write", Scope(disk="loop3", fstype="btrfs"))
    assert not serves_device("kworker/u8:3-btrfs-endio-write", SCOPE)
    assert not belongs(400, 1, "postgres", own, SCOPE)


def test_parse_stat_fields():
    assert parse_stat_fields("412 (jbd2/loop0-8) D 2 0 0") == ("jbd2/loop0-8", "D", 2)
    assert parse_stat_fields("9 (odd (name) x) S 7 9") == ("odd (name) x", "S", 7)


def test_journal_counters():
    info = ("268 transactions (268 requested), each up to 2730 blocks\naverage: \n  0ms waiting for transaction\n"
            "  1333us average transaction commit time\n  5 handles per transaction\n  3 blocks per transaction\n"
            "  5 logged blocks per transaction\n")
    assert parse_jbd2_info(info, 4096) == 268 * 5 * 4096
    assert parse_jbd2_info("garbage", 4096) is None
    assert parse_xfs_log("extent_alloc 1 2 3 4\nlog 7 82 0 7 6\n") == 82 * 512
    assert parse_xfs_log("extent_alloc 1 2 3 4\n") is None
