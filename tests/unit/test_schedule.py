from dataclasses import replace

from pickfs.engine.schedule import Slot, fixed_slots, next_slot
from pickfs.model import Method, Plan, Target, WorkloadSpec, method_of
from pickfs.stack.presets import PRESETS


def cells(n=3):
    cfgs = tuple(PRESETS[x] for x in ("ext4", "xfs", "btrfs")[:n])
    return Plan(Target(), cfgs, (WorkloadSpec("sqlite-tpcb", "sqlite-tpcb"),)).cells()


def drain(cs, method, values_for=lambda slot: 100.0, failed=frozenset()):
    """Run the planner to the end as the executor does; return (config, repetition) in order."""
    done, values, failed = set(), {c.index: [] for c in cs}, set(failed)
    out = []
    while (slot := next_slot(cs, method, done, values, failed)) is not None:
        done.add((slot.cell.index, slot.repetition))
        values[slot.cell.index].append(values_for(slot))
        out.append((slot.cell.config.name, slot.repetition))
    return out


def test_interleaved_order_spreads_drift():
    assert drain(cells(), Method(runs=2)) == [("ext4", 0), ("xfs", 0), ("btrfs", 0),
                                             ("ext4", 1), ("xfs", 1), ("btrfs", 1)]


def test_sequential_order():
    assert drain(cells(2), method_of(runs=2, interleave=False)) == [("ext4", 0), ("ext4", 1), ("xfs", 0), ("xfs", 1)]


def test_resume_skips_finished_slots_and_failed_cells():
    cs = cells()
    left = fixed_slots(cs, Method(runs=2), done={(0, 0), (1, 0)}, failed={2})
    assert [(s.cell.config.name, s.repetition) for s in left] == [("ext4", 1), ("xfs", 1)]
    assert next_slot(cs, Method(runs=2), {(0, 0), (1, 0)}, {}, {2}) == Slot(cs[0], 1)


def test_stopping_rule_stops_quiet_cells_and_repeats_noisy_ones():
    method = Method(runs=3, target_ci=0.02, max_runs=8)
    noisy = iter([100, 140, 90, 130, 95, 150, 85, 120])

    def value(slot):
        return 100.0 + slot.repetition * 0.01 if slot.cell.config.name == "ext4" else float(next(noisy))

    order = drain(cells(2), method, value)
    ext4 = [r for name, r in order if name == "ext4"]
    xfs = [r for name, r in order if name == "xfs"]
    assert ext4 == [0, 1, 2]  # settled after the minimum
    assert xfs == list(range(8))  # never settles: stops at max_runs


def test_out_of_time_stops_extra_repetitions_but_not_the_minimum():
    method = Method(runs=2, target_ci=0.001, max_runs=10)
    cs = cells(1)
    assert next_slot(cs, method, {(0, 0)}, {0: [1.0]}, set(), out_of_time=True) == Slot(cs[0], 1)
    assert next_slot(cs, method, {(0, 0), (0, 1)}, {0: [1.0, 2.0]}, set(), out_of_time=True) is None


def test_fixed_count_ignores_stopping_settings():
    assert len(drain(cells(1), replace(Method(runs=4), max_runs=10))) == 4


def test_slot_walls_and_measured_estimates():
    """A slot's wall is from the end of the slot before to the end of its measured run; slices are left out."""
    from pickfs.engine.schedule import estimate_seconds, measured_estimates, slot_key, slot_walls
    from pickfs.model import Trial

    cs = cells(2)
    m = Method(runs=2, warmup=1)
    keys = {c.index: slot_key(c, m) for c in cs}
    trials = [Trial(run_id="r", cell_index=0, repetition=0, phase="warmup", started=102.0, elapsed_s=1.0, ok=True, metrics={}),
              Trial(run_id="r", cell_index=0, repetition=0, phase="measured", started=104.0, elapsed_s=2.0, ok=True, metrics={}),  # ends at 106: 6 s after the run began
              Trial(run_id="r", cell_index=1, repetition=0, phase="measured", started=110.0, elapsed_s=5.0, ok=True, metrics={}),  # ends at 115: 9 s after the one before
              Trial(run_id="r", cell_index=1, repetition=1, phase="measured", started=116.0, elapsed_s=1.0, ok=False, metrics={}),  # failed: not a timing
              Trial(run_id="r", cell_index=0, repetition=1, phase="measured", started=120.0, elapsed_s=4.0, ok=True, metrics={}),  # 9 s
              Trial(run_id="r", cell_index=1, repetition=1, phase="measured", started=125.0, elapsed_s=1.0, ok=True, metrics={"slice_s": 1.0})]  # a slice
    walls = slot_walls(keys, trials, created=100.0)
    assert walls == {keys[0]: [6.0, 9.0], keys[1]: [9.0]}
    measured = measured_estimates(walls)
    assert estimate_seconds(Slot(cs[0], 0), m, measured=measured) == 7.5
    assert estimate_seconds(Slot(cs[1], 0), m, measured=measured) == 9.0
    # another number of warm-ups, or other settings, is another key: the formula then
    other = Method(runs=2, warmup=0)
    assert estimate_seconds(Slot(cs[0], 0), other, measured=measured) == estimate_seconds(Slot(cs[0], 0), other)


def test_comparison_walls_time_a_side_by_side_comparison_from_the_end_of_what_ran_before():
    from pickfs.engine.schedule import comparison_key, comparison_walls
    from pickfs.model import Trial

    cs = cells(2)
    m = Method()
    key = comparison_key(cs, m)
    trials = [Trial(run_id="r", cell_index=5, repetition=0, phase="measured", started=100.0, elapsed_s=10.0, ok=True, metrics={}),  # another workload first: ends at 110
              Trial(run_id="r", cell_index=0, repetition=0, phase="warmup", started=130.0, elapsed_s=1.0, ok=True, metrics={"slice_s": 1.0}),
              Trial(run_id="r", cell_index=1, repetition=0, phase="measured", started=140.0, elapsed_s=1.0, ok=True, metrics={"slice_s": 1.0}),
              Trial(run_id="r", cell_index=0, repetition=0, phase="measured", started=150.0, elapsed_s=2.0, ok=True, metrics={"slice_s": 1.0})]
    assert comparison_walls({key: {0, 1}}, trials, created=90.0) == {key: 152.0 - 110.0}
    # whole runs are not a side-by-side comparison
    whole = [Trial(run_id="r", cell_index=0, repetition=0, phase="measured", started=150.0, elapsed_s=2.0, ok=True, metrics={})]
    assert comparison_walls({key: {0, 1}}, whole, created=90.0) == {}
    assert comparison_key(cs, m) != comparison_key(cs, method_of(blocks=2))
