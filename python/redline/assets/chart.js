// redlineChart draws one chart spec of redline.charts (Chart.to_dict() with its data) with
// uPlot in `box`, counting its draws in `state.draws`. The options are the HTML report's
// (report.py RENDERER), so a chart looks the same live and in the report.
window.redlineChart = function (spec, data, box, state) {
  var series = [{ label: spec.x_label }];
  spec.series.forEach(function (s) {
    var o = { label: s.label, stroke: s.color, scale: s.scale, width: 2, spanGaps: s.span_gaps };
    if (s.dash) o.dash = [6, 4];
    if (s.points_only) {
      o.paths = function () { return null; };
      o.points = { show: true, size: 9, fill: s.color, stroke: s.color };
    }
    series.push(o);
  });
  var axes = [{ label: spec.x_label }, { label: spec.y_label, scale: "y" }];
  if (spec.series.some(function (s) { return s.scale === "y2"; })) {
    axes.push({ label: spec.y2_label || "", scale: "y2", side: 1, grid: { show: false } });
  }
  var opts = {
    width: Math.max(320, box.clientWidth || 560),
    height: 260,
    series: series,
    axes: axes,
    scales: { x: { time: false } },
    cursor: { drag: { x: true, y: false } },
    hooks: { draw: [function () { state.draws += 1; }] },
  };
  return new uPlot(opts, data, box);
};
