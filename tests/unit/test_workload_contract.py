"""Every registered workload keeps the Workload contract: the base class enforces it, and each one
declares what the engine, the statistics and the reports rely on."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from pickfs.model import MetricDef, WorkloadSpec
from pickfs.workloads import REGISTRY
from pickfs.workloads.base import Workload
from pickfs.workloads.kinds import SHOWN_AS, WorkloadKind

ABSTRACT = {"prepare", "run", "parse"}
# settings a workload cannot do without (everything else has a default)
REQUIRED = {"command": {"command": "true"}}


def test_the_base_class_enforces_the_contract():
    assert Workload.__abstractmethods__ == frozenset(ABSTRACT)

    class Incomplete(Workload):
        name = "incomplete"

        def prepare(self, spec, datadir, endpoint=None):  # run and parse missing
            raise NotImplementedError

    with pytest.raises(TypeError, match="abstract"):
        Incomplete(cache=Path("/nonexistent"))


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_registered_workload_keeps_the_contract(name):
    cls = REGISTRY[name]
    assert cls.name == name
    assert not inspect.isabstract(cls), f"{name} leaves {sorted(cls.__abstractmethods__)} unimplemented"
    cls(cache=Path("/nonexistent"))  # instantiable: every abstract method implemented
    assert cls.description.strip()
    assert cls.metrics and all(isinstance(m, MetricDef) for m in cls.metrics)
    assert len({m.name for m in cls.metrics}) == len(cls.metrics), "metric names repeat"
    assert cls.primary() is cls.metrics[0]
    assert set(cls.breakdown) <= {m.name for m in cls.metrics} | set(cls.breakdown), "breakdown names"
    assert isinstance(inspect.getattr_static(cls, "parse"), staticmethod), "parse must be pure (a staticmethod)"
    # defaults normalise to themselves, and an unknown setting is refused with a hint
    spec = WorkloadSpec(name, name, tuple(sorted(cls.normalize(dict(REQUIRED.get(name, {}))).items())))
    assert cls.normalize(dict(spec.settings)) == dict(spec.settings)
    with pytest.raises(Exception, match="no setting"):
        cls.normalize({**REQUIRED.get(name, {}), "no_such_setting_xyz": 1})
    assert cls.run_seconds(spec) > 0
    # its declared kind (what the report charts it as) and properties
    assert isinstance(cls.kind, WorkloadKind) and cls.kind_for(spec).shown_as in SHOWN_AS
    assert isinstance(cls.checks_itself, bool) and cls.list_settings <= set(cls.defaults)
    if cls.sliceable:
        assert cls.primary().higher_is_better, "a sliced workload's primary metric is a rate"
        sliced = cls.slice_spec(spec, 1.5)
        assert sliced.name == spec.name and sliced.label == spec.label


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_parse_refuses_output_that_is_not_its_own(name):
    """A workload never turns garbage into figures: parse raises (ValueError/KeyError) or finds nothing."""
    parse = REGISTRY[name].parse
    for garbage in ("", "not the output of any client\n", '{"unrelated": 1}'):
        try:
            got = parse(garbage)
        except (ValueError, KeyError):
            continue
        primary = REGISTRY[name].primary().name
        assert primary not in got, f"{name} parsed a primary figure from {garbage!r}: {got}"
