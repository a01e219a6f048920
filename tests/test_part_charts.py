"""One small chart per watched part (redline.report.charts.part_charts): each resource as the
share of its limit in use, interval by interval, on the load's own time axis; what has no
limit (the accept queue's length, errors a second) on the right-hand axis."""

from __future__ import annotations

from redline.report.charts import find_charts, part_charts

TS = [
    {
        "t_s": 0.5,
        "achieved_rate": 10.0,
        "parts": {
            "api": {"cpu_percent": 50.0, "cores_allowed": 1.0, "accept_queue": 3.0},
            "generator": {"busy": 0.125, "wait": 0.0625},
        },
    },
    {"t_s": 1.0, "achieved_rate": 12.0, "parts": {"generator": {"busy": 0.25, "wait": 0.0}}},
    {
        "t_s": 1.5,
        "achieved_rate": 14.0,
        "parts": {
            "api": {"cpu_percent": 150.0, "cores_allowed": 2.0, "accept_queue": 0.0},
            "db": {"pool:conns": 3.0, "pool_limit:conns": 4.0, "errors_rate": 2.5},
            "generator": {"busy": 0.5, "wait": 0.125},
        },
    },
]


def columns(chart) -> dict[str, list[float | None]]:
    return {s.label: chart.data[i + 1] for i, s in enumerate(chart.series)}


def test_each_part_has_its_chart_on_the_loads_intervals_the_generator_last():
    charts = part_charts(TS)
    assert [c.id for c in charts] == ["part-api", "part-db", "part-generator"]
    for c in charts:
        assert c.data[0] == [0.5, 1.0, 1.5] and c.extra == {"small": True}
    api = columns(charts[0])
    assert api["cpu %"] == [50.0, None, 75.0]  # of the cores it may use
    assert api["accept queue (waiting)"] == [3.0, None, 0.0]
    assert [s.scale for s in charts[0].series] == ["y", "y2"]
    db = columns(charts[1])
    assert db == {"pool conns %": [None, None, 75.0], "errors/s": [None, None, 2.5]}
    gen = columns(charts[2])
    assert gen["busy %"] == [12.5, 25.0, 50.0] and gen["waiting for a CPU %"] == [6.25, 0.0, 12.5]


def test_no_parts_no_part_chart():
    ts = [{"t_s": 0.5, "achieved_rate": 1.0}, {"t_s": 1.0, "achieved_rate": 1.0, "parts": {}}]
    assert part_charts(ts) == []
    assert not [c for c in find_charts({"timeseries": ts}) if c.id.startswith("part-")]
