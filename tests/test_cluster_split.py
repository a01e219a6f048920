"""Tests for redline.cluster.split: each injector's share of the load and of the data."""

from __future__ import annotations

import pytest
from redline.cluster.split import apportion, partition_plan, split_config, split_value
from redline.errors import ClusterError

APPORTION = [
    ("even", 9, [1, 1, 1], [3, 3, 3]),
    ("remainder to the first", 10, [1, 1, 1], [4, 3, 3]),
    ("by cores", 12, [4, 2], [8, 4]),
    ("largest remainder", 10, [2, 1], [7, 3]),
    ("zero", 0, [1, 2], [0, 0]),
    ("one over three", 1, [1, 1, 1], [1, 0, 0]),
]


@pytest.mark.parametrize(
    ("label", "total", "weights", "want"), APPORTION, ids=[a[0] for a in APPORTION]
)
def test_apportion(label, total, weights, want) -> None:
    got = apportion(total, weights)
    assert got == want, label
    assert sum(got) == total
    whole = sum(weights)
    assert all(abs(g - total * w / whole) < 1 for g, w in zip(got, weights, strict=True))


def test_split_value_closed_gives_every_injector_a_vu_and_open_is_proportional() -> None:
    assert split_value(10, [1, 1, 1], closed=True) == [4.0, 3.0, 3.0]
    assert split_value(2, [1, 1, 1], closed=True) == [1.0, 1.0, 1.0], "at least one VU each"
    assert split_value(300.0, [2, 1], closed=False) == pytest.approx([200.0, 100.0])


def test_split_config_shares_load_count_pool_and_the_start_instant() -> None:
    base = {"url": "http://h/", "rate": 900.0, "requests": 1000, "max_connections": 100}
    configs = split_config(base, [1, 1, 1], start_at_unix_s=1234.5)
    assert [c["rate"] for c in configs] == pytest.approx([300.0] * 3)
    assert sum(c["requests"] for c in configs) == 1000
    assert [c["max_connections"] for c in configs] == [34, 34, 34]
    assert all(c["start_at_unix_s"] == 1234.5 for c in configs)
    assert base == {"url": "http://h/", "rate": 900.0, "requests": 1000, "max_connections": 100}

    closed = split_config(
        {"url": "http://h/", "connections": 7, "live": True, "max_vus": 20}, [1, 1], 1.0
    )
    assert [c["connections"] for c in closed] == [4, 3]
    assert [c["max_vus"] for c in closed] == [10, 10]

    stages = split_config(
        {"url": "http://h/", "open": True, "stages": [{"duration_s": 2, "target": 100}]},
        [1, 3],
        1.0,
    )
    assert [c["stages"][0]["target"] for c in stages] == pytest.approx([25.0, 75.0])


@pytest.mark.parametrize(
    ("label", "config", "want"),
    [
        (
            "too few VUs",
            {"url": "http://h/", "connections": 2},
            "2 connections cannot be split over 3",
        ),
        ("too few requests", {"url": "http://h/", "connections": 3, "requests": 2}, "2 requests"),
    ],
)
def test_split_config_refuses_what_cannot_be_split(label, config, want) -> None:
    with pytest.raises(ClusterError, match=want):
        split_config(config, [1, 1, 1], 1.0)


def test_data_rows_go_to_one_injector_each() -> None:
    rows = [[str(i)] for i in range(10)]
    plan = {"data": [{"name": "u", "per": "iteration", "columns": ["id"], "rows": rows}], "x": 1}
    parts = [partition_plan(plan, i, 3) for i in range(3)]
    dealt = [r[0] for p in parts for r in p["data"][0]["rows"]]
    assert sorted(dealt, key=int) == [str(i) for i in range(10)], "every row once, none twice"
    assert [len(p["data"][0]["rows"]) for p in parts] == [4, 3, 3]
    assert all(p["x"] == 1 for p in parts)
    assert plan["data"][0]["rows"] == rows, "the plan given is not changed"
    with pytest.raises(ClusterError, match="has 10 rows, fewer than the 11 injectors"):
        partition_plan(plan, 0, 11)


def test_csv_sets_go_whole_with_each_injectors_slice() -> None:
    plan = {"data": [{"name": "u", "per": "iteration", "columns": ["id"], "csv": "id\n1\n2\n"}]}
    parts = [partition_plan(plan, i, 3) for i in range(3)]
    assert [p["data"][0]["slice"] for p in parts] == [[0, 3], [1, 3], [2, 3]]
    assert all(p["data"][0]["csv"] == "id\n1\n2\n" for p in parts)
    assert "slice" not in plan["data"][0], "the plan given is not changed"
