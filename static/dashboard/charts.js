// Fill every [data-chart] container from its JSON endpoint: a Plotly figure spec built on the
// server, a table, or an "empty" message that says what to do. plotly.js is served locally.
// Controls with [data-chart-param] set a query parameter on the charts that list it in their
// data-params and redraw them; the page URL keeps the choice, so it can be shared.
(function () {
  "use strict";

  var PLOT_CONFIG = {
    responsive: true,
    displaylogo: false,
    modeBarButtonsToRemove: ["lasso2d", "select2d"],
  };

  function withParams(url, params) {
    var u = new URL(url, window.location.href);
    Object.keys(params).forEach(function (k) {
      var v = params[k];
      if (v === null || v === undefined || v === "") u.searchParams.delete(k);
      else u.searchParams.set(k, v);
    });
    return u.pathname + u.search;
  }

  // one formatter for every cell (toLocaleString builds a new one each call: slow)
  var INTEGER = new Intl.NumberFormat("en", { maximumFractionDigits: 0 });

  function fmt(v) {
    if (v === null || v === undefined) return "–";
    if (Array.isArray(v)) {
      if (v[0] === null || v[0] === undefined) return "–";
      return fmt(v[0]) + (v[1] === null || v[1] === undefined ? "" : " ± " + fmt(v[1]));
    }
    if (typeof v === "number") {
      if (Number.isInteger(v) && Math.abs(v) < 1e6) return INTEGER.format(v);
      if (Math.abs(v) >= 1000) return INTEGER.format(Math.round(v));
      return String(Number(v.toPrecision(3)));
    }
    return String(v);
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function renderTable(body, spec) {
    var wrap = el("div", "scroll");
    var table = el("table", "data-table");
    var head = el("tr");
    spec.columns.forEach(function (c) {
      var th = el("th", null, c.label);
      if (c.unit) th.appendChild(el("span", "unit", " [" + c.unit + "]"));
      if (c.help) th.title = c.help;  // the full definition behind a short header
      head.appendChild(th);
    });
    table.appendChild(head);
    var lastGroup = null;
    spec.rows.forEach(function (row) {
      var tr = el("tr");
      if (row.group !== undefined && lastGroup !== null && row.group !== lastGroup) tr.className = "group-start";
      lastGroup = row.group === undefined ? null : row.group;
      spec.columns.forEach(function (c, i) {
        var v = row[c.key];
        var td = el("td", typeof v === "number" || Array.isArray(v) ? "num" : null);
        if (c.nowrap) td.style.whiteSpace = "nowrap";
        if (i === 0 && row.colour) {
          var sw = el("span", "swatch");
          sw.style.background = row.colour;
          td.appendChild(sw);
        }
        td.appendChild(document.createTextNode(fmt(v)));
        tr.appendChild(td);
      });
      table.appendChild(tr);
    });
    wrap.appendChild(table);
    body.appendChild(wrap);
  }

  function setExports(box, url, isFigure) {
    var exports = box.querySelector(".chart-exports");
    if (!exports) return;
    exports.querySelectorAll("a[data-export]").forEach(function (a) {
      a.href = withParams(url, { format: a.getAttribute("data-export") });
    });
    var png = exports.querySelector("a.png");
    if (isFigure && !png) {
      png = el("a", "png", "PNG");
      png.href = "#";
      png.addEventListener("click", function (ev) {
        ev.preventDefault();
        // a chart not drawn yet (below the fold) is drawn first, then exported
        drawNow(box).then(function () {
          var body = box.querySelector(".chart-body");
          if (box.getAttribute("data-state") === "ready" && body.classList.contains("js-plotly-plot"))
            window.Plotly.downloadImage(body, { format: "png", filename: box.id, scale: 2 });
        });
      });
      exports.appendChild(document.createTextNode(" · "));
      exports.appendChild(png);
    }
  }

  // plotly.js is a deferred script that takes a while to evaluate; every chart's data is
  // fetched meanwhile (this script runs first), tables and messages are drawn at once, and
  // figures as soon as plotly.js is ready -- but only those on, or within a screen of, the
  // viewport (the others wait until the page is scrolled towards them), in-view ones first,
  // one at a time so the page stays responsive.
  var plotlyReady = new Promise(function (resolve) {
    if (window.Plotly || document.readyState !== "loading") resolve();
    else document.addEventListener("DOMContentLoaded", resolve);
  });
  var queue = [];
  var drawing = false;

  function visible(box) {
    var r = box.getBoundingClientRect();
    return r.bottom > 0 && r.top < (window.innerHeight || 800);
  }

  // a figure is drawn once its container comes within LAZY_MARGIN of the viewport
  var LAZY_MARGIN = "100% 0px"; // one viewport height above and below
  var hasIO = typeof IntersectionObserver === "function";
  function observer(margin, flag, onNear) {
    if (!hasIO) return null;
    return new IntersectionObserver(
      function (entries) {
        entries.forEach(function (e) {
          e.target[flag] = e.isIntersecting;
          if (e.isIntersecting && onNear) onNear(e.target);
        });
      },
      { rootMargin: margin }
    );
  }
  // in the viewport now: drawn before the ones merely near it
  var inView = observer("0px", "_inView");
  var near = observer(LAZY_MARGIN, "_near", function (box) {
    if (box._pending) release(box);
  });

  function drawNext() {
    if (drawing || !queue.length) return;
    var i = 0;
    for (var k = 0; k < queue.length; k++) {
      if (queue[k].box._inView) {
        i = k;
        break;
      }
    }
    var job = queue.splice(i, 1)[0];
    drawing = true;
    var done = function () {
      drawing = false;
      setTimeout(drawNext, 0); // let input and paint in between two figures
    };
    Promise.resolve().then(job.run).then(job.resolve, job.reject).then(done, done);
  }

  // hand a waiting figure to the draw queue
  function release(box) {
    var job = box._pending;
    box._pending = null;
    queue.push(job);
    plotlyReady.then(drawNext);
  }

  // a figure's draw: at once when its container is near the viewport (or when there is no
  // IntersectionObserver), otherwise when it scrolls near
  function enqueue(box, run) {
    return new Promise(function (resolve, reject) {
      box._pending = { box: box, run: run, resolve: resolve, reject: reject };
      if (!near || box._near || box._eager) release(box);
    });
  }

  // draw a chart now, wherever it is (PNG export, drawAll); resolves when it has settled
  function drawNow(box) {
    box._eager = true;
    if (box._pending) release(box);
    return box._settled || Promise.resolve();
  }

  function fail(box, body, err) {
    body.innerHTML = "";
    body.appendChild(
      el(
        "p",
        "chart-message error",
        "This chart could not be loaded (" + err.message + "). Reload the page; if it " +
          "keeps failing, the server log (or the worker log) says why."
      )
    );
    box.setAttribute("data-state", "error");
  }

  function load(box) {
    var url = box.getAttribute("data-chart");
    var body = box.querySelector(".chart-body");
    var note = box.querySelector(".chart-note");
    var seq = (box._seq = (box._seq || 0) + 1); // a newer load wins over a slower older one
    box.setAttribute("data-state", "loading");
    if (box._pending) box._pending.resolve(null); // superseded before it was drawn
    box._pending = null;
    var settled = fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) throw new Error("the server answered " + r.status);
        return r.json();
      })
      .then(function (data) {
        if (seq !== box._seq) return null;
        var clear = function () {
          if (window.Plotly && body.classList.contains("js-plotly-plot")) window.Plotly.purge(body);
          body.innerHTML = "";
          note.textContent = data.note || "";
          setExports(box, url, !!data.figure);
        };
        if (data.empty || data.table) {
          clear();
          body.appendChild(el("h3", "chart-title", data.title));
          if (data.empty) body.appendChild(el("p", "chart-message empty-state", data.empty));
          else renderTable(body, data.table);
          box.setAttribute("data-state", data.empty ? "empty" : "ready");
          return null;
        }
        note.textContent = data.note || "";
        setExports(box, url, true); // CSV/JSON/PNG work before the figure is drawn
        return enqueue(box, function () {
          if (seq !== box._seq) return null;
          if (!window.Plotly) throw new Error("plotly.js did not load; reload the page");
          clear();
          var fig = data.figure;
          var cfg = Object.assign({}, PLOT_CONFIG, {
            toImageButtonOptions: { format: "png", filename: box.id, scale: 2 },
          });
          return window.Plotly.newPlot(body, fig.data, fig.layout, cfg).then(function () {
            box.setAttribute("data-state", "ready");
          });
        });
      })
      .catch(function (err) {
        if (seq === box._seq) fail(box, body, err);
      });
    box._settled = settled;
    return settled;
  }

  function params(box) {
    return (box.getAttribute("data-params") || "").split(/\s+/).filter(Boolean);
  }

  function applyParam(name, value, only) {
    document.querySelectorAll("[data-chart]").forEach(function (box) {
      if (params(box).indexOf(name) < 0) return;
      if (only && only.indexOf(box.id) < 0) return;
      var p = {};
      p[name] = value;
      box.setAttribute("data-chart", withParams(box.getAttribute("data-chart"), p));
    });
    var page = {};
    page[name] = value;
    window.history.replaceState(null, "", withParams(window.location.href, page));
  }

  function controls() {
    var here = new URL(window.location.href).searchParams;
    document.querySelectorAll("select[data-chart-param]").forEach(function (sel) {
      var name = sel.getAttribute("data-chart-param");
      if (here.get(name)) {
        sel.value = here.get(name);
        applyParam(name, sel.value);
      }
      sel.addEventListener("change", function () {
        applyParam(name, sel.value);
        document.querySelectorAll("[data-chart]").forEach(function (box) {
          if (params(box).indexOf(name) >= 0) load(box);
        });
      });
    });
    document.querySelectorAll("form[data-chart-target]").forEach(function (form) {
      // one chart id, or several separated by spaces
      var target = form.getAttribute("data-chart-target").split(/\s+/).filter(Boolean);
      form.querySelectorAll("[data-chart-param]").forEach(function (input) {
        var name = input.getAttribute("data-chart-param");
        if (here.get(name)) {
          input.value = here.get(name);
          applyParam(name, input.value, target);
        }
      });
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        form.querySelectorAll("[data-chart-param]").forEach(function (input) {
          applyParam(input.getAttribute("data-chart-param"), input.value, target);
        });
        target.forEach(function (id) {
          var box = document.getElementById(id);
          if (box) load(box);
        });
      });
    });
  }

  // The page's ready signals (tests and the benchmark wait for them), in ms since navigation
  // start: data-charts-visible="done" with data-charts-visible-ms when the charts in the first
  // screen have settled (drawn, or an empty/error message); data-charts="done" with
  // data-charts-ms once every chart container on the page has settled -- which, as figures
  // below the fold are drawn lazily, happens only after the page was scrolled past them (or
  // window.clustersimCharts.drawAll() was called). window.clustersimCharts also offers the
  // promises visible and all.
  function stamp(name) {
    var b = document.body;
    b.setAttribute("data-charts" + (name ? "-" + name : "") + "-ms", String(Math.round(performance.now())));
    b.setAttribute("data-charts" + (name ? "-" + name : ""), "done");
  }

  function start() {
    var boxes = Array.prototype.slice.call(document.querySelectorAll("[data-chart]"));
    if (!boxes.length) return;
    controls();
    var first = boxes.filter(visible);
    boxes.forEach(function (box) {
      box._inView = box._near = first.indexOf(box) >= 0;
      if (near) near.observe(box);
      if (inView) inView.observe(box);
    });
    boxes.forEach(load);
    var settled = function (list) {
      return Promise.all(list.map(function (box) { return box._settled; }));
    };
    var api = {
      visible: settled(first).then(function () { stamp("visible"); }),
      all: settled(boxes).then(function () { stamp(""); }),
      drawAll: function () {
        return Promise.all(boxes.map(drawNow));
      },
    };
    window.clustersimCharts = api;
  }

  start();
})();
