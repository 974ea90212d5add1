"""A crash state lost to a cause pickfs measured and traced to the database itself says so in its problem: under
InnoDB's defaults, a table whose torn first page recovery left unmended though its doublewrite copy was on disk;
under Firebird's forced writes, a page its power cut tore (Firebird keeps no copy to mend one)."""

from pickfs.crash import runner
from pickfs.crash.runner import StateResult

CORRUPTED = ("database: OperationalError: (1877, 'Table `sbtest`.`pickfs_commits` is corrupted. Please drop the "
             "table and recreate.')")
GFIX = "gfix -v: Number of index page errors: 1"


def result(problem: str, torn: int = 0, consistent: bool | None = False, lost: int = 0) -> StateResult:
    return StateResult(index=0, mode="torn writes", cut=0, dropped=1, mounted=True, fsck_ok=True, db_opened=True,
                       consistent=consistent, lost=lost, lost_seconds=0.0, acked_before=10, problem=problem,
                       torn=torn)


def named(backend: str, r: StateResult, settings: dict | None = None) -> str:
    return runner.Commits(backend, settings or {}).named(r).problem


def test_innodb_s_unmended_first_page_is_named_in_the_state_s_problem():
    problem = named("mariadb", result(CORRUPTED))
    assert problem.startswith(f"{CORRUPTED}; the likely cause, measured by pickfs: InnoDB's crash recovery")
    assert "doublewrite" in problem
    assert named("mariadb", result(CORRUPTED), {"innodb_doublewrite": "0"}) == CORRUPTED  # the setting's own risk


def test_other_databases_name_no_cause_for_the_same_words():
    assert named("postgresql", result(CORRUPTED, torn=1)) == CORRUPTED


def test_a_firebird_state_damaged_where_its_power_cut_tore_a_page_names_the_torn_page():
    problem = named("firebird", result(GFIX, torn=1))
    assert problem.startswith(f"{GFIX}; the likely cause, measured by pickfs: a page torn by the power cut")
    assert "8 KiB" in problem
    assert named("firebird", result(GFIX, torn=0)) == GFIX  # nothing torn: no such cause
    assert named("firebird", result(GFIX, torn=1), {"forced_writes": "off"}) == GFIX  # the setting's own risk
    assert named("firebird", result("", torn=2, consistent=True)) == ""  # a state that did not fail: nothing named


def test_a_state_that_would_not_open_gets_its_cause_too():
    r = StateResult(index=0, mode="torn writes", cut=0, dropped=1, mounted=True, fsck_ok=True, db_opened=False,
                    consistent=None, lost=10, lost_seconds=1.0, acked_before=10, problem="", torn=1)
    assert runner.Commits("firebird", {}).named(r).problem.startswith("the likely cause, measured by pickfs: a page")
