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

  function fmt(v) {
    if (v === null || v === undefined) return "–";
    if (Array.isArray(v)) {
      if (v[0] === null || v[0] === undefined) return "–";
      return fmt(v[0]) + (v[1] === null || v[1] === undefined ? "" : " ± " + fmt(v[1]));
    }
    if (typeof v === "number") {
      if (Number.isInteger(v) && Math.abs(v) < 1e6) return v.toLocaleString("en");
      if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString("en");
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
        var body = box.querySelector(".chart-body");
        window.Plotly.downloadImage(body, { format: "png", filename: box.id, scale: 2 });
      });
      exports.appendChild(document.createTextNode(" · "));
      exports.appendChild(png);
    }
  }

  function load(box) {
    var url = box.getAttribute("data-chart");
    var body = box.querySelector(".chart-body");
    var note = box.querySelector(".chart-note");
    box.setAttribute("data-state", "loading");
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) throw new Error("the server answered " + r.status);
        return r.json();
      })
      .then(function (data) {
        if (window.Plotly && body.classList.contains("js-plotly-plot")) window.Plotly.purge(body);
        body.innerHTML = "";
        note.textContent = data.note || "";
        setExports(box, url, !!data.figure);
        if (data.empty) {
          body.appendChild(el("h3", "chart-title", data.title));
          body.appendChild(el("p", "chart-message empty-state", data.empty));
          box.setAttribute("data-state", "empty");
          return null;
        }
        if (data.table) {
          body.appendChild(el("h3", "chart-title", data.title));
          renderTable(body, data.table);
          box.setAttribute("data-state", "ready");
          return null;
        }
        var fig = data.figure;
        var cfg = Object.assign({}, PLOT_CONFIG, {
          toImageButtonOptions: { format: "png", filename: box.id, scale: 2 },
        });
        return window.Plotly.newPlot(body, fig.data, fig.layout, cfg).then(function () {
          box.setAttribute("data-state", "ready");
        });
      })
      .catch(function (err) {
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
      });
  }

  function params(box) {
    return (box.getAttribute("data-params") || "").split(/\s+/).filter(Boolean);
  }

  function applyParam(name, value, only) {
    document.querySelectorAll("[data-chart]").forEach(function (box) {
      if (params(box).indexOf(name) < 0) return;
      if (only && box.id !== only) return;
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
      var target = form.getAttribute("data-chart-target");
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
        var box = document.getElementById(target);
        if (box) load(box);
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var boxes = document.querySelectorAll("[data-chart]");
    if (!boxes.length) return;
    if (!window.Plotly) {
      boxes.forEach(function (box) {
        box.querySelector(".chart-body").innerHTML =
          '<p class="chart-message error">plotly.js did not load; reload the page.</p>';
        box.setAttribute("data-state", "error");
      });
      return;
    }
    controls();
    Promise.all(Array.prototype.map.call(boxes, load)).then(function () {
      document.body.setAttribute("data-charts", "done");
    });
  });
})();
