"""The catch-rate benchmark tells a state that failed only after power failed again during its recovery (its first
recovery had every commit) from one that failed at its first power cut, and counts each distinct state once."""

from tests.benchmark_module import load_benchmark

catch_rate = load_benchmark("crash_catch_rate")


def state(lost=0, recovery="", same_as=-1, opened=True):
    return {"lost": lost, "mounted": True, "db_opened": opened, "consistent": True, "recovery": recovery,
            "same_as": same_as}


SECOND_CUT = ("power failed again after 270 of the 281 writes and flushes of recovery and its check (3 unflushed "
              "units lost); the first recovery: ")


def test_a_loss_after_a_second_power_cut_is_told_apart_from_one_at_the_first():
    crash = {"states": [state(), state(lost=3), state(lost=3, same_as=1),
                        state(opened=False, recovery=SECOND_CUT + "recovered"),
                        state(lost=5, recovery=SECOND_CUT + "lost 5 acknowledged commits")]}
    failed = catch_rate.failed_states(crash)
    assert len(failed) == 3  # the copy of state 1 counted once
    assert [catch_rate.after_recovery_cut(s) for s in failed] == [False, True, False]
    assert catch_rate.failures_said(crash) == ("failed in 3 distinct states, 1 of them only after power failed again "
                                               "during recovery (the first recovery had every commit)")
    assert catch_rate.failures_said({"states": [state(lost=2)]}) == "failed in 1 distinct states"
    assert catch_rate.failures_said({"states": [state()]}) == "nothing lost"


def test_a_loss_traced_to_innodb_under_its_defaults_is_no_false_alarm():
    corrupted = state(lost=3478, opened=True)
    corrupted["problem"] = ("database: OperationalError: (1877, 'Table `sbtest`.`pickfs_commits` is corrupted. Please "
                            "drop the table and recreate.')")
    missing = state(lost=4062)
    missing["problem"] = ("database: OperationalError: (1030, 'Got error 194 \"Tablespace is missing for a table\" "
                          "from storage engine InnoDB')")
    other = state(lost=5)
    other["problem"] = "accounts sum to 7 but the commits' deltas to 9"
    crash = {"states": [corrupted, missing, other]}
    assert [catch_rate.known_cause("mariadb", s) != "" for s in crash["states"]] == [True, True, False]
    assert catch_rate.false_alarms("mariadb", crash) == [other]
    assert catch_rate.false_alarms("postgresql", {"states": [corrupted]}) == [corrupted]  # only InnoDB's is known
    assert catch_rate.failures_said(crash, "mariadb").endswith(
        "2 of them a loss pickfs traced to the database itself (not a false alarm)")


def test_a_firebird_state_damaged_where_a_page_was_torn_is_a_finding_not_a_false_alarm():
    torn = state()
    torn.update(consistent=False, torn=1, problem="gfix -v: Number of record level errors: 1")
    whole = state()
    whole.update(consistent=False, torn=0, problem="gfix -v: Number of record level errors: 1")
    crash = {"states": [torn, whole]}
    assert catch_rate.false_alarms("firebird", crash) == [whole]  # damage with nothing torn stays a false alarm
    assert catch_rate.false_alarms("postgresql", {"states": [torn]}) == [torn]  # PostgreSQL mends its torn pages
