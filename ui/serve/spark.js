// The board's two small drawings, made once per row element and then only re-pointed: the
// occupancy ring (an SVG circle's dash, as <context-meter> draws its own, without the element's
// shadow DOM, panel and events: a board shows thousands) and the sparkline of a session's
// projection over its history, with its auto-compaction threshold.

const NS = 'http://www.w3.org/2000/svg';
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const r1 = (v) => Math.round(v * 10) / 10;

function node(name, attrs) {
  const el = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

/** A 16px ring: a track, an arc (pathLength 100) and the compaction's tick. */
export function ring() {
  const svg = node('svg', { class: 'ring', viewBox: '0 0 16 16', 'aria-hidden': 'true', focusable: 'false' });
  const arc = node('circle', { class: 'arc', cx: 8, cy: 8, r: 6, pathLength: 100, 'stroke-dasharray': '0 100',
    transform: 'rotate(-90 8 8)' });
  const tick = node('line', { class: 'tick', x1: 8, y1: 0.5, x2: 8, y2: 4.5 });
  svg.append(node('circle', { class: 'track', cx: 8, cy: 8, r: 6 }), arc, tick);
  svg.arc = arc;
  svg.tick = tick;
  svg.drawn = '';
  return svg;
}

/** Points the ring at an occupancy (clamped to the ring) and a threshold share (or null). */
export function drawRing(svg, occupancy, mark) {
  const share = occupancy == null ? 0 : Math.max(0, Math.min(occupancy, 1));
  const dash = +(share * 100).toFixed(1);
  const m = mark != null && mark > 0 && mark <= 1 ? +(mark * 360).toFixed(1) : null;
  const key = `${dash}|${m}`;
  if (svg.drawn === key) return;
  svg.drawn = key;
  svg.arc.setAttribute('stroke-dasharray', dash >= 100 ? '100 0' : `${dash} 100`);
  if (m == null) svg.tick.setAttribute('visibility', 'hidden');
  else {
    svg.tick.removeAttribute('visibility');
    svg.tick.setAttribute('transform', `rotate(${m} 8 8)`);
  }
}

const SW = 100;
const SH = 24;

/** A sparkline: the projection's line and the threshold's dashes, stretched to the cell. */
export function spark() {
  const svg = node('svg', { class: 'spark', viewBox: `0 0 ${SW} ${SH}`, preserveAspectRatio: 'none',
    'aria-hidden': 'true', focusable: 'false' });
  svg.threshold = node('path', { class: 'threshold', d: '' });
  svg.line = node('path', { class: 'line', d: '' });
  svg.append(svg.threshold, svg.line);
  svg.drawn = null;
  return svg;
}

/** The paths of up to 32 values (null breaks the line), to the window's scale, else to what was
 * seen, and of the threshold: `{line, threshold}`, made once per state of a row. */
export function sparkPaths(values, capacity, compactAt) {
  const vs = Array.isArray(values) ? values.map(num) : [];
  let seen = 0;
  for (const v of vs) if (v != null && v > seen) seen = v;
  const top = Math.max(1, capacity ?? 0, seen, compactAt ?? 0);
  const Y = (v) => r1(SH - 1.5 - (Math.max(0, v) / top) * (SH - 3));
  const step = vs.length > 1 ? SW / (vs.length - 1) : 0;
  let d = '';
  let pen = false;
  vs.forEach((v, i) => {
    if (v == null) {
      pen = false;
      return;
    }
    d += `${pen ? 'L' : 'M'}${r1(i * step)} ${Y(v)}`;
    pen = true;
  });
  // A single reading is a short stroke at its height, not an invisible point.
  if (vs.filter((v) => v != null).length === 1) d += `h${vs.length > 1 ? 2 : SW}`;
  return { line: d, threshold: compactAt != null && compactAt <= top ? `M0 ${Y(compactAt)}H${SW}` : '' };
}

/** Points a sparkline at its paths (from `sparkPaths`). */
export function drawSpark(svg, paths) {
  if (svg.drawn === paths) return;
  svg.drawn = paths;
  if (svg.line.getAttribute('d') !== paths.line) svg.line.setAttribute('d', paths.line);
  if (svg.threshold.getAttribute('d') !== paths.threshold) svg.threshold.setAttribute('d', paths.threshold);
}
