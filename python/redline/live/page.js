// The live page: applies the server-sent events of redline.live.events to the figures, the
// search's steps and the charts (drawn by assets/chart.js, as in the report). On the start
// page of `redline ui` (body data-ui="1") a form starts a run first, and another once it
// ended. State for tests and curious users: window.redlineLive.
(function () {
  "use strict";
  var query = location.search.indexOf("token=") >= 0 ? location.search : "";
  var live = (window.redlineLive = {
    events: 0, intervals: 0, steps: 0, status: "connecting", last: null, charts: {}, names: [],
  });
  var $ = function (id) { return document.getElementById(id); };
  var ui = document.body.dataset.ui === "1";
  var es = null;

  function num(v, digits) {
    if (v === null || v === undefined || !isFinite(v)) return "–";
    return Number(v).toLocaleString("en", { maximumFractionDigits: digits === undefined ? 0 : digits });
  }
  function ms(v) {
    if (v === null || v === undefined) return "–";
    return v >= 1000 ? num(v / 1000, 2) + " s" : num(v, v < 10 ? 2 : 1) + " ms";
  }
  function pct(v) { return v === null || v === undefined ? "–" : num(100 * v, 2) + "%"; }
  function setText(id, text) { var el = $(id); if (el) el.textContent = text; }

  function setStatus(status) {
    live.status = status;
    var pill = $("status");
    pill.textContent = status;
    pill.className = "pill " + status;
    var stop = $("stop");
    stop.disabled = status !== "running";
    stop.hidden = ["ready", "done", "stopped", "failed"].indexOf(status) >= 0;
    if (ui) $("start").disabled = ["ready", "done", "stopped", "failed"].indexOf(status) < 0;
  }

  function showFigures(s, totals) {
    if (s && s.t_s !== undefined) {
      live.last = s;
      setText("clock", "t = " + num(s.t_s, 1) + " s" + (s.warmup ? " (warm-up)" : ""));
      setText("f-rate", num(s.achieved_rate) + " req/s");
      setText("f-offered", s.intended_rate ? "offered " + num(s.intended_rate) + " req/s" : "closed model: offered = achieved");
      setText("f-latency", "p50 " + ms(s.p50_ms) + " · p95 " + ms(s.p95_ms) + " · p99 " + ms(s.p99_ms));
      setText("f-latency-more", "p99.9 " + ms(s.p99_9_ms) + " · max " + ms(s.max_ms) + " (this interval)");
      var users = s.load !== null && s.load !== undefined ? s.phase + " at load " + num(s.load, 2) + " · " : "";
      setText("f-load", users + num(s.active_connections) + " connections");
      setText("f-inflight", num(s.in_flight) + " requests in flight");
      if (s.service) {
        $("service").hidden = false;
        setText("f-cpu", s.service.cpu_percent === null ? "–" : num(s.service.cpu_percent) + "% CPU");
        var rss = s.service.rss_bytes === null ? "–" : num(s.service.rss_bytes / 1048576, 1) + " MiB RSS";
        setText("f-mem", rss + " · " + (s.service.fds === null ? "–" : num(s.service.fds)) + " fds");
      }
    }
    if (totals) {
      var classes = Object.keys(totals.errors_by_class || {}).filter(function (k) { return totals.errors_by_class[k]; });
      setText("f-errors", num(totals.errors) + " errors of " + num(totals.requests + totals.errors - (totals.errors_by_class.status || 0) - (totals.errors_by_class.check || 0)) + " outcomes");
      setText("f-classes", classes.length ? classes.map(function (k) { return k + " " + num(totals.errors_by_class[k]); }).join(" · ") : "none by class");
      setText("f-total", num(totals.requests) + " answered · " + num(totals.intended) + " intended");
    }
  }

  // showWhole headlines a finished run by its whole-run figures (the summary's), not by its
  // last interval, which is often partial (a stop, the drain after the end).
  function showWhole(w) {
    live.whole = w;
    setText("clock", num(w.duration_s, 2) + " s (whole run)");
    setText("f-rate", num(w.achieved_rate, 1) + " req/s");
    setText("f-latency", "p50 " + ms(w.p50_ms) + " · p95 " + ms(w.p95_ms) + " · p99 " + ms(w.p99_ms));
    setText("f-latency-more", "p99.9 " + ms(w.p99_9_ms) + " · max " + ms(w.max_ms) + " (whole run)");
  }

  function addStep(st) {
    live.steps += 1;
    $("search").hidden = false;
    var tr = document.createElement("tr");
    if (!st.ok) tr.className = "bad";
    var verdict = st.ok ? "ok" : (st.fired || []).join(", ") + (st.why ? ": " + st.why : "");
    [st.index + 1, st.phase, num(st.load, 2), num(st.throughput_rps, 1), ms(st.p50_ms), ms(st.p99_ms),
     pct(st.error_rate), verdict].forEach(function (v, i) {
      var td = document.createElement("td");
      td.textContent = v;
      if (i === 7) td.style.textAlign = "left";
      tr.appendChild(td);
    });
    $("steps").appendChild(tr);
  }

  // showNames fills the per-name table (the run so far; the report's figures once done).
  function showNames(rows) {
    if (!rows || !rows.length) return;
    live.names = rows;
    $("per-name").hidden = false;
    var body = $("names");
    body.innerHTML = "";
    rows.forEach(function (r) {
      var tr = document.createElement("tr");
      if (r.errors) tr.className = "bad";
      var classes = Object.keys(r.errors_by_class || {}).map(function (k) { return k + " " + num(r.errors_by_class[k]); });
      // What the service said: the answers by the value at the request's tally path.
      var tally = r.tally || {};
      var said = Object.keys(tally).sort(function (a, b) { return tally[b] - tally[a]; }).map(function (k) { return k + " " + num(tally[k]); });
      [r.name, num(r.requests), num(r.errors), ms(r.p50_ms), ms(r.p95_ms), ms(r.p99_ms), classes.join(" · "), said.join(" · ")].forEach(function (v, i) {
        var td = document.createElement("td");
        td.textContent = v;
        if (i === 0 || i >= 6) td.style.textAlign = "left";
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
  }

  function figureFor(spec) {
    var fig = document.querySelector('[data-chart="' + spec.id + '"]');
    if (!fig) {
      fig = document.createElement("figure");
      fig.className = "chart";
      fig.id = "chart-" + spec.id;
      fig.dataset.chart = spec.id;
      fig.innerHTML = '<figcaption></figcaption><div class="note"></div><div class="plot"></div>';
      $("charts").appendChild(fig);
    }
    fig.querySelector("figcaption").textContent = spec.title;
    fig.querySelector(".note").textContent = spec.note || "";
    return fig;
  }

  function applyCharts(patches) {
    (patches || []).forEach(function (p) {
      var c = live.charts[p.id];
      if (p.spec) {
        if (c && c.plot) c.plot.destroy();
        var fig = figureFor(p.spec);
        var box = fig.querySelector(".plot");
        box.innerHTML = "";
        c = live.charts[p.id] = { spec: p.spec, data: p.cols, draws: c ? c.draws : 0, box: box, updates: 0 };
        c.plot = window.redlineChart(p.spec, c.data, box, c);
      } else if (c) {
        c.data = c.data.map(function (col, i) { return col.slice(0, p.start).concat(p.cols[i]); });
        c.plot.setData(c.data);
      }
      if (c) c.updates += 1;
    });
  }

  // connect follows the run's event stream (a new one for each run the start page starts).
  function connect() {
    if (es) es.close();
    es = new EventSource("events" + query);
    es.addEventListener("state", function (e) {
      var s = JSON.parse(e.data);
      live.events += 1;
      if (ui && s.title) document.querySelector("h1").textContent = s.title;
      $("steps").innerHTML = "";
      live.steps = 0;
      (s.steps || []).forEach(addStep);
      setStatus(s.status);
      showFigures(s.last, s.totals);
      showNames(s.last && s.last.names);
      applyCharts(s.charts);
    });
    es.addEventListener("interval", function (e) {
      var s = JSON.parse(e.data);
      live.events += 1;
      live.intervals += 1;
      showFigures(s, s.totals);
      showNames(s.names);
      applyCharts(s.charts);
    });
    es.addEventListener("step", function (e) { live.events += 1; addStep(JSON.parse(e.data)); });
    es.addEventListener("status", function (e) { live.events += 1; setStatus(JSON.parse(e.data).status); });
    es.addEventListener("done", function (e) {
      var d = JSON.parse(e.data);
      live.events += 1;
      es.close();  // the server goes away after the run (and its linger): no reconnect
      setStatus(d.status);
      showFigures(null, d.totals);
      if (d.whole) showWhole(d.whole);
      showNames(d.names);
      if (d.error) setText("form-error", d.error);
      if (d.report) {
        var a = $("report");
        a.href = d.report + query;
        a.hidden = false;
      }
    });
  }

  // reset clears the page for a new run (the start page).
  function reset() {
    Object.keys(live.charts).forEach(function (id) { live.charts[id].plot.destroy(); });
    live.charts = {};
    live.events = live.intervals = live.steps = 0;
    live.last = null;
    live.names = [];
    $("charts").innerHTML = "";
    $("names").innerHTML = "";
    $("per-name").hidden = true;
    $("report").hidden = true;
    setText("form-error", "");
  }

  function startPage() {
    var form = $("start-form");
    var token = new URLSearchParams(location.search).get("token");
    function fields() {
      var f = {};
      new FormData(form).forEach(function (v, k) { f[k] = v; });
      return f;
    }
    var timer = null;
    var asked = 0; // previews asked for: only the latest one's answer is shown
    function preview() {
      var n = ++asked;
      if (!fields().target) { setText("command", "–"); setText("form-error", ""); return; }
      var params = new URLSearchParams(fields());
      if (token) params.set("token", token);
      fetch("command?" + params).then(function (r) { return r.json(); }).then(function (d) {
        if (n !== asked) return; // a later edit asked again: this answer is stale
        setText("command", d.command || "–");
        setText("form-error", d.error || "");
      });
    }
    form.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(preview, 150); });
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      $("start").disabled = true;
      fetch("start" + query, {
        method: "POST",
        headers: { "X-Redline-Stop": document.body.dataset.stop, "Content-Type": "application/json" },
        body: JSON.stringify(fields()),
      }).then(function (r) {
        return r.json().then(function (d) {
          if (!r.ok) { setText("form-error", d.error); $("start").disabled = false; return; }
          reset();
          setText("command", d.command);
          setStatus("connecting");
          connect();
        });
      });
    });
    preview();
  }

  if (!ui) connect();
  else if (document.body.dataset.run === "1") { startPage(); connect(); }
  else { startPage(); setStatus("ready"); }

  $("stop").addEventListener("click", function () {
    var stop = $("stop");
    stop.disabled = true;
    fetch("stop" + query, { method: "POST", headers: { "X-Redline-Stop": document.body.dataset.stop } })
      .then(function (r) { if (r.ok) setStatus("stopping"); else stop.disabled = false; });
  });
})();
