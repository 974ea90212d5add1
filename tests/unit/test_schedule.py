from pickfs.engine.schedule import order, remaining
from pickfs.model import Method, Plan, Target, WorkloadSpec
from pickfs.stack.presets import PRESETS


def plan(runs=3, interleave=True):
    cfgs = tuple(PRESETS[n] for n in ("ext4", "xfs", "btrfs"))
    return Plan(Target(), cfgs, (WorkloadSpec("sqlite-tpcb", "sqlite-tpcb"),), Method(runs=runs, interleave=interleave))


def names(slots):
    return [(s.cell.config.name, s.repetition) for s in slots]


def test_interleaved_order_spreads_drift():
    p = plan()
    assert names(order(p.cells(), p.method)) == [
        ("ext4", 0), ("xfs", 0), ("btrfs", 0), ("ext4", 1), ("xfs", 1), ("btrfs", 1),
        ("ext4", 2), ("xfs", 2), ("btrfs", 2)]


def test_sequential_order():
    p = plan(runs=2, interleave=False)
    assert names(order(p.cells(), p.method)) == [("ext4", 0), ("ext4", 1), ("xfs", 0), ("xfs", 1),
                                                 ("btrfs", 0), ("btrfs", 1)]


def test_resume_skips_finished_slots_and_failed_cells():
    p = plan(runs=2)
    slots = order(p.cells(), p.method)
    left = remaining(slots, done={(0, 0), (1, 0)}, failed_cells={2})
    assert names(left) == [("ext4", 1), ("xfs", 1)]
