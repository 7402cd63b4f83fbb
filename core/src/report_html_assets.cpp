// The HTML report's style sheet and script, inlined into every page
// (Report::to_html): no library, no font, nothing fetched. The script reads
// the report from <script id="imgpipe-data" type="application/json">, draws
// the charts as SVG into the <div class="chart"> placeholders, and marks
// <body data-drawn="N"> with the number of charts drawn (data-error="..."
// when drawing failed), which tests read back through headless Chromium.
#include "report_html.hpp"

namespace imgpipe::report_html {

const char* const kStyle = R"CSS(
:root { --fg: #1d2330; --muted: #5b6475; --line: #d9dde5; --bg: #ffffff; --panel: #f6f7f9;
        --work: #2f6fdf; --wait: #f0a030; --bad: #c8382e; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1180px; padding: 20px 28px 48px; color: var(--fg); background: var(--bg);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 16px 0 6px; color: var(--muted); }
.meta, .note { color: var(--muted); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 9px; background: var(--bad); color: #fff;
         font-size: 12px; font-weight: 600; }
.figures { display: flex; flex-wrap: wrap; gap: 10px; margin: 14px 0; }
.figure { background: var(--panel); border-radius: 6px; padding: 8px 14px; min-width: 150px; }
.figure b { display: block; font-size: 18px; }
.figure span { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: right; padding: 3px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { font-weight: 600; color: var(--muted); font-size: 12px; }
th:first-child, td:first-child { text-align: left; }
tr.bottleneck td { background: #fff4e0; font-weight: 600; }
table.failures th, table.failures td { text-align: left; white-space: normal; word-break: break-all; }
table.failures td.count, table.failures th.count { text-align: right; white-space: nowrap; }
.times { color: var(--muted); }
pre.config { background: var(--panel); padding: 8px 12px; border-radius: 6px; overflow-x: auto; font-size: 12px; }
.chart { margin: 6px 0 4px; }
.chart svg { display: block; width: 100%; height: auto; overflow: visible; }
.chart text { font: 11px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; fill: var(--fg); }
.chart .axis { stroke: var(--line); stroke-width: 1; }
.chart .muted { fill: var(--muted); }
.legend { color: var(--muted); font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 12px; border-radius: 2px; }
dl.kv { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; margin: 8px 0; }
dl.kv dt { color: var(--muted); }
dl.kv dd { margin: 0; }
)CSS";

const char* const kScript = R"JS(
(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  var COLORS = ["#2f6fdf", "#15a17a", "#8e57d6", "#d9548b", "#e0822a", "#3aa0c8", "#7b8f2b", "#b5472e",
                "#5566aa", "#2c8f5f", "#a0752b"];
  var W = 1100, LEFT = 150, RIGHT = 70;

  function el(name, attrs, parent, text) {
    var e = document.createElementNS(SVGNS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function svg(id, height) {
    var host = document.getElementById(id);
    var s = el("svg", {viewBox: "0 0 " + W + " " + height, width: W, height: height, role: "img"});
    host.appendChild(s);
    return s;
  }
  function tip(node, text) { el("title", {}, node, text); return node; }
  function fmt(v) {
    var a = Math.abs(v);
    return v.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
  }
  function mib(b) { return (b / 1048576).toFixed(1) + " MiB"; }

  // The ticks with a zero tick in front: every interval then has a start.
  function ticks(data) {
    var t = data.timeline.ticks, n = data.timeline.stages.length, zero = {t_s: 0, items: [], busy_s: [],
        wait_s: [], done: 0, failed: 0, ring_in_use: 0, rss_bytes: t.length ? t[0].rss_bytes : 0};
    for (var i = 0; i < n; i++) { zero.items.push(0); zero.busy_s.push(0); zero.wait_s.push(0); }
    return [zero].concat(t);
  }

  // A time axis at height y for a run of `end` seconds (at most about 10 labels).
  function timeAxis(s, y, end) {
    el("line", {x1: LEFT, y1: y, x2: W - RIGHT, y2: y, "class": "axis"}, s);
    var steps = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400];
    var step = steps[steps.length - 1];
    for (var i = 0; i < steps.length; i++) if (end / steps[i] <= 10) { step = steps[i]; break; }
    for (var t = 0; t <= end + 1e-9; t += step) {
      var x = LEFT + (W - LEFT - RIGHT) * t / end;
      el("line", {x1: x, y1: y, x2: x, y2: y + 4, "class": "axis"}, s);
      el("text", {x: x, y: y + 16, "text-anchor": "middle", "class": "muted"}, s, +t.toFixed(1) + " s");
    }
  }

  // Per-stage utilisation: the stage's own work and its blocked waits, as
  // shares of the time its threads could have worked.
  function drawUtilisation(data) {
    var st = data.stages, row = 24, s = svg("chart-utilisation", st.length * row + 24);
    st.forEach(function (x, i) {
      var cap = data.pipeline_s * x.concurrency, wait = cap > 0 ? x.wait_s / cap : 0, y = i * row;
      var plot = W - LEFT - RIGHT, work = Math.min(x.utilization, 1);
      el("text", {x: LEFT - 8, y: y + 16, "text-anchor": "end"}, s,
         x.name + (x.name === data.bottleneck ? " \u25c0" : ""));
      el("rect", {x: LEFT, y: y + 4, width: plot, height: row - 8, fill: "#eef0f4"}, s);
      tip(el("rect", {x: LEFT, y: y + 4, width: plot * work, height: row - 8, fill: "#2f6fdf",
                      "class": "bar"}, s), x.name + ": working " + (100 * x.utilization).toFixed(1) + "%");
      tip(el("rect", {x: LEFT + plot * work, y: y + 4, width: plot * Math.min(wait, 1 - work), height: row - 8,
                      fill: "#f0a030"}, s), x.name + ": blocked " + (100 * wait).toFixed(1) + "%");
      el("text", {x: W - RIGHT + 6, y: y + 16}, s, (100 * x.utilization).toFixed(0) + "%");
    });
    return 1;
  }

  // One lane per stage: samples per second between ticks (data.lanes,
  // Report::to_html), every lane against the same peak so lanes compare;
  // a lane's top (and the peak) leave out the last, short interval.
  function drawLanes(data) {
    var t = ticks(data), lanes = data.timeline.stages, lane = data.lanes.height_px, end = t[t.length - 1].t_s || 1e-3;
    var s = svg("chart-lanes", lanes.length * lane + 26), plot = W - LEFT - RIGHT, peak = data.lanes.peak;
    lanes.forEach(function (name, j) {
      var rates = data.lanes.rates[j], top = data.lanes.tops[j];
      var y0 = j * lane, base = y0 + lane - 4, h = lane - 8, d = "M" + LEFT + " " + base;
      for (var k = 0; k < rates.length; k++) {
        var y = base - (peak > 0 ? h * Math.min(rates[k], peak) / peak : 0);
        d += " L" + (LEFT + plot * t[k].t_s / end).toFixed(1) + " " + y.toFixed(1) +
             " L" + (LEFT + plot * t[k + 1].t_s / end).toFixed(1) + " " + y.toFixed(1);
      }
      d += " L" + (LEFT + plot) + " " + base + " Z";
      el("rect", {x: LEFT, y: y0 + 2, width: plot, height: lane - 4, fill: j % 2 ? "#fafbfc" : "#f3f5f8"}, s);
      tip(el("path", {d: d, fill: COLORS[j % COLORS.length], "fill-opacity": 0.75, "class": "lane",
                      "data-top": fmt(top)}, s), name + ": peak " + fmt(top) + " samples/s");
      el("text", {x: LEFT - 8, y: y0 + lane / 2 + 4, "text-anchor": "end"}, s, name);
      el("text", {x: W - RIGHT + 6, y: y0 + lane / 2 + 4, "class": "muted"}, s, fmt(top) + "/s");
    });
    el("text", {x: W - RIGHT + 6, y: lanes.length * lane + 16, "class": "muted scale"}, s,
       "scale " + fmt(peak) + "/s");
    timeAxis(s, lanes.length * lane + 2, end);
    return 1;
  }

  // A line (or steps) over time: series [{name, color, values, step}], y from 0 to ymax.
  function drawSeries(id, data, series, ymax, label, cap) {
    var t = ticks(data), end = t[t.length - 1].t_s || 1e-3, h = 150, plot = W - LEFT - RIGHT;
    var s = svg(id, h + 30);
    ymax = ymax > 0 ? ymax : 1;
    el("line", {x1: LEFT, y1: 4, x2: LEFT, y2: h, "class": "axis"}, s);
    el("text", {x: LEFT - 8, y: 12, "text-anchor": "end", "class": "muted"}, s, label(ymax));
    el("text", {x: LEFT - 8, y: h, "text-anchor": "end", "class": "muted"}, s, label(0));
    if (cap !== undefined) {
      var yc = h - (h - 4) * cap / ymax;
      el("line", {x1: LEFT, y1: yc, x2: W - RIGHT, y2: yc, stroke: "#999", "stroke-dasharray": "4 3"}, s);
    }
    series.forEach(function (ser) {
      var d = "";
      for (var i = 0; i < t.length; i++) {
        var x = (LEFT + plot * t[i].t_s / end).toFixed(1), y = (h - (h - 4) * ser.values[i] / ymax).toFixed(1);
        if (ser.step && i > 0) d += " L" + x + " " + (h - (h - 4) * ser.values[i - 1] / ymax).toFixed(1);
        d += (i ? " L" : "M") + x + " " + y;
      }
      tip(el("path", {d: d, fill: "none", stroke: ser.color, "stroke-width": 2, "class": "series"}, s), ser.name);
    });
    timeAxis(s, h, end);
    return 1;
  }

  function draw(data) {
    var n = drawUtilisation(data), t = ticks(data);
    if (!data.timeline.ticks.length) return n;
    n += drawLanes(data);
    var ring = t.map(function (k) { return k.ring_in_use; });
    n += drawSeries("chart-ring", data, [{name: "slots in use", color: "#2f6fdf", values: ring, step: true}],
                    data.memory.slots, function (v) { return v + " slots"; }, data.memory.slots);
    var rss = t.map(function (k) { return k.rss_bytes; });
    n += drawSeries("chart-memory", data, [{name: "resident memory", color: "#15a17a", values: rss}],
                    Math.max.apply(null, rss), mib);
    var done = t.map(function (k) { return k.done; }), failed = t.map(function (k) { return k.failed; });
    n += drawSeries("chart-inputs", data, [{name: "done (delivered or failed)", color: "#2f6fdf", values: done},
                                           {name: "failed", color: "#c8382e", values: failed}],
                    Math.max(data.inputs.discovered, done[done.length - 1]), function (v) { return v + ""; });
    return n;
  }

  try {
    var data = JSON.parse(document.getElementById("imgpipe-data").textContent);
    document.body.setAttribute("data-drawn", String(draw(data)));
  } catch (e) {
    document.body.setAttribute("data-error", String(e && e.stack || e));
    throw e;
  }
})();
)JS";

}  // namespace imgpipe::report_html
