/* grpolab static sliders: draw a figure from a grid that grpolab precomputed at build time.
 *
 * No kernel, no network, no libraries: the page embeds the grid as JSON
 * (<script type="application/json" class="grpolab-grid">) inside a
 * <div class="grpolab-static-slider">, and this file draws it as SVG.
 * The grid is made by grpolab.widgets.static_slider_figure; its format:
 *   sliders:  [{name, label, values: [...], initial: index}]  (all sliders)
 *   curve_sliders: names of the sliders the curves depend on (the rest only move the marker
 *             and the readouts)
 *   curves:   flat list over the curve sliders' index grid (row-major):
 *             {x: [...], ys: [[...] per series]}
 *   readouts: flat list over all sliders' index grid (row-major): [value per readout]
 *   marker:   name of the slider whose value is marked on the x axis, or null
 */
(function (root) {
  "use strict";
  if (root.grpolabSliders) { return; }
  var NS = "http://www.w3.org/2000/svg";
  // Light-mode colours (matplotlib's tab10) as SVG attributes, so a saved copy of a chart keeps
  // them; on the page the style's var(--grpolab-cN) (grpolab-sliders.css) follows the theme.
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];
  // Margins of the plot area, in CSS pixels. The chart's width is the width it is shown at
  // (measured, between MIN_W and MAX_W), so its text is drawn at its CSS size on any screen.
  var L = 64, R = 16, T = 14, B = 46, MIN_W = 260, MAX_W = 760;

  function seriesColor(i) {
    var k = i % COLORS.length;
    return {attr: COLORS[k], style: "var(--grpolab-c" + k + ", " + COLORS[k] + ")"};
  }

  // Width and height (CSS px) for a chart inside `box`: the box's content width, clamped.
  function chartSize(box) {
    var cs = root.getComputedStyle ? root.getComputedStyle(box) : null;
    var pad = cs ? (parseFloat(cs.paddingLeft) || 0) + (parseFloat(cs.paddingRight) || 0) : 0;
    var w = Math.round(Math.max(MIN_W, Math.min(MAX_W, (box.clientWidth || 640) - pad)));
    return {W: w, H: Math.round(Math.max(230, Math.min(360, w * 0.53)))};
  }

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (parent) { parent.appendChild(e); }
    return e;
  }

  function flatIndex(indices, sizes) {
    var i = 0;
    for (var d = 0; d < sizes.length; d++) { i = i * sizes[d] + indices[d]; }
    return i;
  }

  function fmt(v, digits) {
    if (v === "inf") { return "\u221e"; }
    if (v === null || v === undefined || !isFinite(v)) { return "n/a"; }
    if (v !== 0 && (Math.abs(v) >= 1e5 || Math.abs(v) < 1e-3)) { return v.toExponential(digits - 1); }
    return String(Number(v.toPrecision(digits)));
  }

  function niceTicks(lo, hi, n) {
    var span = hi - lo;
    if (!(span > 0)) { return [lo]; }
    var step = Math.pow(10, Math.floor(Math.log10(span / n)));
    var err = (n * step) / span;
    if (err <= 0.15) { step *= 10; } else if (err <= 0.35) { step *= 5; } else if (err <= 0.75) { step *= 2; }
    var ticks = [];
    for (var t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) { ticks.push(Number(t.toPrecision(12))); }
    return ticks;
  }

  function logTicks(lo, hi) {
    // powers of 10; also 2× and 5× when the axis spans less than about three decades
    var mults = Math.log10(hi / lo) < 3 ? [1, 2, 5] : [1];
    var ticks = [];
    for (var e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      mults.forEach(function (m) {
        var v = m * Math.pow(10, e);
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) { ticks.push(Number(v.toPrecision(12))); }
      });
    }
    return ticks;
  }

  function log2Ticks(lo, hi, maxTicks) {
    var ticks = [];
    for (var v = 1; v <= hi * (1 + 1e-9); v *= 2) { if (v >= lo * (1 - 1e-9)) { ticks.push(v); } }
    var step = 1;
    while (ticks.length / step > maxTicks) { step *= 2; }  // a narrow chart: every 2nd, 4th...
    return ticks.filter(function (t, i) { return i % step === 0; });
  }

  function Figure(root) {
    this.root = root;
    this.spec = JSON.parse(root.querySelector("script.grpolab-grid").textContent);
    var spec = this.spec;
    this.index = {};
    for (var s = 0; s < spec.sliders.length; s++) { this.index[spec.sliders[s].name] = spec.sliders[s].initial; }
    this.build();
    this.draw();
  }

  Figure.prototype.build = function () {
    var spec = this.spec, self = this;
    var controls = document.createElement("div");
    controls.className = "grpolab-controls";
    spec.sliders.forEach(function (s) {
      var row = document.createElement("label");
      row.className = "grpolab-slider";
      var name = document.createElement("span");
      name.className = "grpolab-slider-label";
      name.textContent = s.label;
      var input = document.createElement("input");
      input.type = "range"; input.min = "0"; input.max = String(s.values.length - 1); input.step = "1";
      input.value = String(s.initial);
      input.setAttribute("data-param", s.name);
      input.setAttribute("aria-label", s.label);
      var value = document.createElement("output");
      value.className = "grpolab-slider-value";
      input.addEventListener("input", function () { self.index[s.name] = Number(input.value); self.draw(); });
      row.appendChild(name); row.appendChild(input); row.appendChild(value);
      controls.appendChild(row);
      s._output = value;
    });
    this.root.appendChild(controls);
    this.svg = el("svg", {role: "img", "class": "grpolab-plot", tabindex: "0"});  // opens full size (grpolab-zoom.js)
    this.svg.setAttribute("aria-label", spec.title);
    this.root.appendChild(this.svg);
    if (root.ResizeObserver) {  // redraw at the new width (a rotated phone, a resized window)
      var pending = false;
      new root.ResizeObserver(function () {
        if (pending) { return; }
        pending = true;
        root.requestAnimationFrame(function () {
          pending = false;
          if (chartSize(self.root).W !== self.drawnW) { self.draw(); }
        });
      }).observe(this.root);
    }
    var legend = document.createElement("div");
    legend.className = "grpolab-legend";
    spec.series.forEach(function (label, i) {
      var item = document.createElement("span");
      var sw = document.createElement("span");
      sw.className = "grpolab-swatch"; sw.style.background = seriesColor(i).style;
      item.appendChild(sw); item.appendChild(document.createTextNode(label));
      legend.appendChild(item);
    });
    this.root.appendChild(legend);
    if (!spec.ylim) {  // a y-axis that rescales: say so, or a slider that scales the curve seems dead
      this.yNote = document.createElement("p");
      this.yNote.className = "grpolab-axis-note";
      this.yNote.setAttribute("aria-live", "polite");
      this.root.appendChild(this.yNote);
    }
    var table = document.createElement("table");
    table.className = "grpolab-readouts";
    this.readoutCells = spec.readouts_labels.map(function (label) {
      var tr = document.createElement("tr");
      var th = document.createElement("th"); th.textContent = label;
      var td = document.createElement("td"); td.setAttribute("data-role", "readout");
      tr.appendChild(th); tr.appendChild(td); table.appendChild(tr);
      return td;
    });
    this.root.appendChild(table);
  };

  Figure.prototype.draw = function () {
    var spec = this.spec, self = this;
    spec.sliders.forEach(function (s) { s._output.textContent = fmt(s.values[self.index[s.name]], 4); });
    var curveIdx = spec.curve_sliders.map(function (n) { return self.index[n]; });
    var curveSizes = spec.curve_sliders.map(function (n) {
      return spec.sliders.filter(function (s) { return s.name === n; })[0].values.length;
    });
    var curve = spec.curves[flatIndex(curveIdx, curveSizes)];
    var allIdx = spec.sliders.map(function (s) { return self.index[s.name]; });
    var allSizes = spec.sliders.map(function (s) { return s.values.length; });
    var readouts = spec.readouts[flatIndex(allIdx, allSizes)];
    readouts.forEach(function (v, i) { self.readoutCells[i].textContent = fmt(v, spec.digits); });

    var svg = this.svg, size = chartSize(this.root), W = size.W, H = size.H;
    this.drawnW = W;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("width", String(W));
    svg.setAttribute("height", String(H));
    var narrow = W < 420;
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var xs = curve.x;
    var pts = [];
    curve.ys.forEach(function (ys) { ys.forEach(function (y, j) { if (y !== null && isFinite(y) && (!spec.logy || y > 0)) { pts.push(y); } }); });
    var xlo = Math.min.apply(null, xs), xhi = Math.max.apply(null, xs);
    var ylo, yhi;
    if (spec.ylim) { ylo = spec.ylim[0]; yhi = spec.ylim[1]; }
    else {
      ylo = pts.length ? Math.min.apply(null, pts) : 0; yhi = pts.length ? Math.max.apply(null, pts) : 1;
      if (!spec.logy) { ylo = Math.min(0, ylo); yhi = yhi > ylo ? yhi * 1.05 : ylo + 1; }
    }
    if (this.yNote) {
      this.yNote.textContent = "The y-axis follows the curves: it now runs from " + fmt(ylo, 3) + " to " +
        fmt(yhi, 3) + (spec.logy ? " (log scale)" : "") + ".";
    }
    var fx = spec.logx ? function (v) { return Math.log(v); } : function (v) { return v; };
    var fy = spec.logy ? function (v) { return Math.log(v); } : function (v) { return v; };
    var X = function (v) { return L + (fx(v) - fx(xlo)) / ((fx(xhi) - fx(xlo)) || 1) * (W - L - R); };
    var Y = function (v) { return H - B - (fy(v) - fy(ylo)) / ((fy(yhi) - fy(ylo)) || 1) * (H - T - B); };
    var axes = el("g", {"class": "grpolab-axes"}, svg);
    el("line", {x1: L, y1: H - B, x2: W - R, y2: H - B}, axes);
    el("line", {x1: L, y1: T, x2: L, y2: H - B}, axes);
    var xt = spec.logx ? log2Ticks(xlo, xhi, narrow ? 5 : 9) : niceTicks(xlo, xhi, narrow ? 4 : 6);
    xt.forEach(function (t) {
      el("line", {x1: X(t), y1: H - B, x2: X(t), y2: H - B + 5}, axes);
      el("text", {x: X(t), y: H - B + 18, "text-anchor": "middle"}, axes).textContent = fmt(t, 3);
    });
    var yt = spec.logy ? logTicks(ylo, yhi) : niceTicks(ylo, yhi, narrow ? 4 : 5);
    yt.forEach(function (t) {
      el("line", {x1: L - 5, y1: Y(t), x2: L, y2: Y(t)}, axes);
      el("line", {x1: L, y1: Y(t), x2: W - R, y2: Y(t), "class": "grpolab-grid-line"}, axes);
      el("text", {x: L - 8, y: Y(t) + 4, "text-anchor": "end"}, axes).textContent = fmt(t, 3);
    });
    el("text", {x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", "class": "grpolab-axis-label"}, axes).textContent = spec.xlabel;
    el("text", {x: 14, y: (T + H - B) / 2, "text-anchor": "middle", "class": "grpolab-axis-label",
                transform: "rotate(-90 14 " + (T + H - B) / 2 + ")"}, axes).textContent = spec.ylabel;
    var clipY = function (y) { return Math.max(T, Math.min(H - B, Y(y))); };
    // The first series is the one the title names: draw it last, on top of the others.
    var order = curve.ys.map(function (_, i) { return i; }).reverse();
    order.forEach(function (i) {
      var ys = curve.ys[i], c = seriesColor(i), d = [];
      ys.forEach(function (y, j) {
        if (y !== null && isFinite(y) && (!spec.logy || y > 0)) { d.push(X(xs[j]).toFixed(2) + "," + clipY(y).toFixed(2)); }
      });
      el("polyline", {points: d.join(" "), fill: "none", stroke: c.attr, style: "stroke: " + c.style,
                      "stroke-width": i === 0 ? 2.5 : 2, "data-series": spec.series[i]}, svg);
      if (xs.length <= 16) {  // few points: show where the data are
        d.forEach(function (pt) {
          var xy = pt.split(",");
          el("circle", {cx: xy[0], cy: xy[1], r: 2.5, fill: c.attr, style: "fill: " + c.style, "class": "grpolab-point"}, svg);
        });
      }
    });
    if (spec.marker) {
      var mv = spec.sliders.filter(function (s) { return s.name === spec.marker; })[0].values[self.index[spec.marker]];
      el("line", {x1: X(mv), y1: T, x2: X(mv), y2: H - B, "class": "grpolab-marker"}, svg);
      var j = xs.indexOf(mv);
      if (j >= 0) {
        order.forEach(function (i) {
          var y = curve.ys[i][j], c = seriesColor(i);
          if (y !== null && isFinite(y) && (!spec.logy || y > 0)) {
            el("circle", {cx: X(mv), cy: clipY(y), r: 4, fill: c.attr, style: "fill: " + c.style, "data-value": y}, svg);
          }
        });
      }
    }
  };

  function mountAll() {
    var roots = document.querySelectorAll(".grpolab-static-slider:not([data-mounted])");
    for (var i = 0; i < roots.length; i++) {
      roots[i].setAttribute("data-mounted", "1");
      try { new Figure(roots[i]); }
      catch (err) { roots[i].setAttribute("data-error", String(err)); throw err; }
    }
  }

  root.grpolabSliders = {mountAll: mountAll, chartSize: chartSize, seriesColor: seriesColor};
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", mountAll); }
  else { mountAll(); }
})(window);
