// redlineChart draws one chart spec of redline.report.charts (Chart.to_dict(), its data passed
// apart) with uPlot in `box`, counting its draws in `state.draws`. The HTML report
// (redline/report/render.py) and the live page (redline/live/page.js) both draw with it, so a chart
// looks the same live and in the report; charts follow the window's width.
(function () {
  "use strict";
  var HEIGHT = 260;
  var SMALL = 160; // a watched part's chart (spec.extra.small)
  var plots = [];

  function width(box) { return Math.max(320, box.clientWidth || 560); }

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
    var height = spec.extra && spec.extra.small ? SMALL : HEIGHT;
    var opts = {
      width: width(box),
      height: height,
      series: series,
      axes: axes,
      scales: { x: { time: false } },
      cursor: { drag: { x: true, y: false } },
      hooks: { draw: [function () { state.draws += 1; }] },
    };
    var plot = new uPlot(opts, data, box);
    plots.push([plot, box, height]);
    return plot;
  };

  window.addEventListener("resize", function () {
    // A destroyed plot (the live page redraws a chart whose series changed) is forgotten.
    plots = plots.filter(function (p) { return p[0].root.isConnected; });
    plots.forEach(function (p) { p[0].setSize({ width: width(p[1]), height: p[2] }); });
  });
})();
