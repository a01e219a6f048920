"""A page read by its values off the last page's shape is what prometheus_client's parser
reads from it (redline.service.exposition): same samples, names and counters, and every page
of another shape goes to the parser."""

from __future__ import annotations

import math
import random

import pytest
from redline.service.exposition import Pages, parse, split

#: PAGE: the text format's corners, with {} where each value goes.
PAGE = """# HELP jobs_done Jobs done (postgres_exporter's counters have no _total).
# TYPE jobs_done counter
jobs_done{{kind="a"}} {}
jobs_done{{kind="b }} c",note="say \\"hi\\""}} {}
# TYPE tasks_total counter
tasks_total {} 1700000000000
# TYPE depth gauge
depth	{}
# TYPE lat histogram
lat_bucket{{le="0.1"}} {}
lat_bucket{{le="+Inf"}} {}
lat_sum {}
lat_count {}
untyped_thing{{a="x y"}} {}

pool_in_use {}
"""


def page(values: list[str]) -> str:
    return PAGE.format(*values)


def values(rng: random.Random) -> list[str]:
    choices = ["0", "1", "2.5", "1e3", "-4", "NaN", "+Inf", "-Inf", "12345678901234567891"]
    return [
        rng.choice(choices) if rng.random() < 0.3 else str(rng.randint(0, 10**6)) for _ in range(10)
    ]


def same(a: object, b: object) -> bool:
    """same: equal, a NaN equal to a NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_pages_of_one_shape_read_as_the_parser_reads_them():
    rng = random.Random(4)
    pages = Pages()
    for _ in range(50):
        text = page(values(rng))
        got, want = pages.parse(text), parse(text)
        assert same(got.samples, want.samples), text
        assert got.names == want.names and got.counters == want.counters
    assert pages.parsed == 1 and pages.reused == 49
    # The counter without _total is named as the parser names it.
    assert "jobs_done_total" in got.counters and "tasks_total" in got.counters


@pytest.mark.parametrize(
    ("label", "change"),
    [
        ("a series born", lambda t: t + 'jobs_done{kind="z"} 3\n'),
        ("a family retyped", lambda t: t.replace("# TYPE depth gauge", "# TYPE depth counter")),
        ("a help text changed", lambda t: t.replace("Jobs done", "Jobs finished")),
        ("a series gone", lambda t: t.replace("lat_sum 5\n", "")),
    ],
)
def test_a_page_of_another_shape_is_parsed_again(label, change):
    pages = Pages()
    first = page(["5"] * 10)
    pages.parse(first)
    text = change(first)
    got, want = pages.parse(text), parse(text)
    assert same(got.samples, want.samples) and got.counters == want.counters, label
    assert pages.parsed == 2 and pages.reused == 0, label


@pytest.mark.parametrize(
    ("label", "line"),
    [
        ("three words after the name", 'x{a="b"} 1 2 3'),
        ("no value", "x"),
        ("an underscore in the value (the parser refuses it)", "x 1_000"),
    ],
)
def test_a_line_the_split_does_not_read_is_left_to_the_parser(label, line):
    assert split(f"# TYPE x gauge\n{line}\n") is None, label


def test_a_wrong_value_on_a_known_shape_is_the_parsers_error():
    pages = Pages()
    pages.parse(page(["5"] * 10))
    with pytest.raises(ValueError):
        pages.parse(page(["5"] * 9 + ["five"]))
