([minPlot, maxLegend, tol]) => {
  // What is wrong with the layout of each Plotly figure of the page (tests/browser/test_chart_layout.py).
  // Text boxes are the rendered titles, axis titles, tick labels, legend entries and annotations,
  // each a rotated rectangle in page pixels (its SVG bounding box through its screen transform);
  // two overlap when the separating-axis test finds them interpenetrating by more than ``tol``.
  const SELECTORS = ['.gtitle', '.xtitle', '.ytitle', '.y2title', '.xtick text', '.ytick text',
    '.y2tick text', '.legendtext', '.annotation-text'];
  const corners = (el) => {
    const b = el.getBBox(), m = el.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  const shown = (el) => {
    if (!el.textContent.trim()) return false;
    const r = el.getBoundingClientRect();
    if (r.width < 0.5 || r.height < 0.5) return false;
    for (let e = el; e && e.nodeType === 1; e = e.parentNode) {
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden' || s.opacity === '0') return false;
    }
    return true;
  };
  const depth = (p, q) => {  // penetration depth of two convex polygons (<= 0: apart)
    let best = Infinity;
    for (const poly of [p, q]) {
      for (let i = 0; i < poly.length; i++) {
        const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % poly.length];
        let nx = y1 - y2, ny = x2 - x1;
        const len = Math.hypot(nx, ny);
        if (len < 1e-9) continue;
        nx /= len; ny /= len;
        const proj = (poly2) => poly2.map(([x, y]) => x * nx + y * ny);
        const a = proj(p), b = proj(q);
        const overlap = Math.min(Math.max(...a), Math.max(...b)) - Math.max(Math.min(...a), Math.min(...b));
        best = Math.min(best, overlap);
      }
    }
    return best;
  };
  const out = [];
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const chart = gd.closest('[data-chart]');
    const id = chart ? chart.id : '?';
    const problems = [];
    const size = gd._fullLayout._size;
    if (size.h < minPlot) problems.push(`plot area only ${Math.round(size.h)} px high`);
    const frame = gd.getBoundingClientRect();
    const legend = gd.querySelector('.legend');
    if (legend && shown(legend) && legend.getBoundingClientRect().height > maxLegend * frame.height)
      problems.push(`legend takes ${Math.round(100 * legend.getBoundingClientRect().height / frame.height)} % of the chart`);
    const boxes = [];
    for (const sel of SELECTORS) {
      for (const el of gd.querySelectorAll(sel)) {
        if (!shown(el)) continue;
        boxes.push({ sel, text: el.textContent.trim().slice(0, 40), q: corners(el) });
      }
    }
    for (const b of boxes) {
      const xs = b.q.map((p) => p[0]), ys = b.q.map((p) => p[1]);
      if (Math.min(...xs) < frame.left - tol || Math.max(...xs) > frame.right + tol ||
          Math.min(...ys) < frame.top - tol || Math.max(...ys) > frame.bottom + tol)
        problems.push(`${b.sel} "${b.text}" sticks out of the chart`);
    }
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const d = depth(boxes[i].q, boxes[j].q);
        if (d > tol)
          problems.push(`${boxes[i].sel} "${boxes[i].text}" overlaps ${boxes[j].sel} "${boxes[j].text}" by ${d.toFixed(1)} px`);
      }
    out.push({ id, texts: boxes.length, problems: problems.slice(0, 8), more: Math.max(0, problems.length - 8) });
  }
  return out;
}
