import pytest

from pickfs.errors import PlanError
from pickfs.units import parse_duration, parse_size


@pytest.mark.parametrize("text,expected", [("4G", 4 * 1024**3), ("512M", 512 * 1024**2), ("4GiB", 4 * 1024**3),
                                           ("1024", 1024), (2048, 2048), ("1.5k", 1536)])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text,expected", [("20s", 20), ("2m", 120), ("500ms", 0.5), (3, 3.0), ("1h", 3600)])
def test_parse_duration(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("bad", ["four", "4X", "", "-1G"])
def test_bad_size_names_the_fix(bad):
    with pytest.raises(PlanError) as err:
        parse_size(bad)
    assert "4G" in err.value.one_line()


def test_bad_duration():
    with pytest.raises(PlanError):
        parse_duration("soon")
