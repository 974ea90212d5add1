import textwrap

import pytest

from pickfs.errors import PlanError
from pickfs.model import FsConfig, Method, Target, plan_from_dict, plan_to_dict
from pickfs.plan import build_plan, load_plan_file, one_variable_warnings, resolve_fs_name, setting_differences
from pickfs.stack.presets import PRESETS


def write(tmp_path, text):
    p = tmp_path / "plan.toml"
    p.write_text(textwrap.dedent(text))
    return p


def test_full_plan_file(tmp_path):
    plan = load_plan_file(write(tmp_path, """
        baseline = "ext4"
        [target]
        size = "2G"
        [method]
        runs = 3
        warmup = 2
        [[config]]
        preset = "ext4"
        [[config]]
        name = "ext4-noatime"
        base = "ext4"
        fs = "ext4"
        mount = "noatime"
        scheduler = "mq-deadline"
        [[workload]]
        name = "sqlite-tpcb"
        label = "full"
        duration = "3s"
        [[workload]]
        name = "sqlite-tpcb"
        label = "off"
        synchronous = "off"
    """))
    assert plan.target.size_bytes == 2 * 1024**3
    assert (plan.method.runs, plan.method.warmup) == (3, 2)
    assert [c.name for c in plan.configs] == ["ext4", "ext4-noatime"]
    assert plan.configs[1].mount_options == ("noatime",) and plan.configs[1].scheduler == "mq-deadline"
    assert [w.label for w in plan.workloads] == ["full", "off"]
    assert plan.workloads[0].get("duration") == 3.0 and plan.workloads[1].get("synchronous") == "OFF"
    # ext4-noatime differs from ext4 in a mount option and the scheduler: two settings
    assert len(plan.warnings) == 2 and "2 settings" in plan.warnings[0]
    assert "use a device target" in plan.warnings[1]  # its scheduler, on an image
    cells = plan.cells()
    assert len(cells) == 4 and cells[0].key == "ext4/full" and cells[3].key == "ext4-noatime/off"


def test_plan_round_trips_through_its_stored_form(tmp_path):
    plan = load_plan_file(write(tmp_path, 'fs = ["ext4", "xfs-tuned"]\n'))
    assert plan_from_dict(plan_to_dict(plan)) == plan


@pytest.mark.parametrize("text,fragment", [
    ('fs = ["ext5"]', "unknown preset or filesystem 'ext5'"),
    ('[[config]]\npreset = "ext4"\nmountt = "x"', "unknown key(s) mountt"),
    ('fs = ["ext4"]\n[[workload]]\nname = "nope"', "unknown workload 'nope'"),
    ('fs = ["ext4"]\n[[workload]]\nsynchronous = "SOMETIMES"', "synchronous = 'SOMETIMES' is not a value of this setting"),
    ('fs = ["ext4"]\n[method]\nruns = 0', "runs must be at least 1"),
    ('fs = ["ext4"]\nbaseline = "xfs"', "baseline 'xfs' is not a configuration"),
    ('fs = ["ext4", "ext4"]', "used twice"),
    ('fs = ["ext4"]\n[target]\nsize = "10M"', "too small"),
    ('fs = ["ext4"]\n[target]\nkind = "cloud"', "unknown target kind"),
    ('fs = [', "not valid TOML"),
    ('[[config]]\npreset = "ext4"\nscheduler = "cfq"', "unknown I/O scheduler 'cfq'"),
])
def test_bad_plans_name_the_fix(tmp_path, text, fragment):
    with pytest.raises(PlanError) as err:
        load_plan_file(write(tmp_path, text))
    assert fragment in err.value.message
    assert err.value.hint  # every error says what to do


def test_missing_plan_file(tmp_path):
    with pytest.raises(PlanError, match="not found"):
        load_plan_file(tmp_path / "nope.toml")


def test_unknown_preset_lists_the_valid_ones():
    with pytest.raises(PlanError) as err:
        resolve_fs_name("ext5")
    assert "ext4-nobarrier" in err.value.hint


def test_known_filesystem_type_without_preset_is_accepted():
    assert resolve_fs_name("jfs") == FsConfig("jfs", "jfs", description="jfs with default options")


def test_presets_that_name_a_base_vary_one_setting():
    assert one_variable_warnings(tuple(PRESETS.values())) == []


def test_setting_differences():
    a = FsConfig("a", "xfs")
    b = PRESETS["xfs-tuned"]
    diffs = setting_differences(b, a)
    assert "mkfs -l (unset) -> lazy-count=1,size=128m" in diffs
    assert "mount (unset) -> logbufs=8" in diffs and "mount (unset) -> logbsize=256k" in diffs
    assert setting_differences(PRESETS["ext4-nobarrier"], PRESETS["ext4"]) == ["mount (unset) -> nobarrier"]
    assert setting_differences(PRESETS["btrfs"], PRESETS["ext4"]) == ["filesystem ext4 -> btrfs"]


def test_two_changes_at_once_are_warned_about():
    base = PRESETS["xfs"]
    tuned = FsConfig("mine", "xfs", mount_options=("logbufs=8", "logbsize=256k"), base="xfs")
    warnings = one_variable_warnings((base, tuned))
    assert len(warnings) == 1 and "mine differs from its base xfs in 2 settings" in warnings[0]


def test_build_plan_needs_configs_and_directory_paths():
    with pytest.raises(PlanError, match="no configuration"):
        build_plan(Target(), [], [], Method(), None)
    from pickfs.model import WorkloadSpec
    wl = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb")
    with pytest.raises(PlanError, match="directory target needs a path"):
        build_plan(Target(kind="directory"), [PRESETS["ext4"]], [wl], Method(), None)
