// One session so far, as an SVG drawn from the meter's states (`add`) or from the server's history
// of the session (`load`, `append`): the provider's readings as steps,
// the projection as steps over a light area, the auto-compaction threshold dashed, and each
// compaction marked. No chart framework: a few paths, redrawn at most once a frame.
// Bounded: past MAX_POINTS points, every two become one (the later, keeping a compaction's mark).

export const MAX_POINTS = 512;

const W = 640;
const H = 200;
const M = { left: 44, right: 12, top: 12, bottom: 22 };
const NS = 'http://www.w3.org/2000/svg';
const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumSignificantDigits: 3 });
const whole = new Intl.NumberFormat('en');
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const r1 = (v) => Math.round(v * 10) / 10;

function node(name, attrs = {}, text = null) {
  const el = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text != null) el.textContent = text;
  return el;
}

// A compaction, from what the records say: the surface shrank (messageTokens only ever falls at
// a replacement), or, where the surface is unknown (a partial session), the projection fell
// while the provider's reading held.
function compacted(prev, p) {
  if (prev.message != null && p.message != null) return p.message < prev.message;
  return prev.projected != null && p.projected != null && p.projected < prev.projected
    && p.pressure === prev.pressure;
}

// The runs of points where `key` is known, each as [x, value] vertices of a step-after line
// that holds each value until the next point (the last until `end`).
function runs(points, key, end) {
  const out = [];
  let run = null;
  for (const p of points) {
    const v = p[key];
    if (v == null) {
      if (run) run.push([p.x, run.at(-1)[1]]);
      run = null;
    } else {
      if (!run) out.push((run = []));
      run.push([p.x, v]);
    }
  }
  if (run) run.push([end, run.at(-1)[1]]);
  return out;
}

export class SessionChart {
  #points = [];
  #queued = false;

  constructor() {
    this.svg = node('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img',
      preserveAspectRatio: 'xMidYMid meet' });
    this.title = node('title');
    this.svg.append(this.title);
    this.parts = {};
    // Drawn in this order: the readings over the projection they anchor.
    for (const name of ['grid', 'area', 'threshold', 'projection', 'readings', 'dots', 'marks', 'labels']) {
      this.parts[name] = node('g', { class: name });
      this.svg.append(this.parts[name]);
    }
    this.draw();
  }

  /** The points kept: copies. */
  get points() { return this.#points.map((p) => ({ ...p })); }

  /** Adds the meter's state after a record; an older seq than the last point starts again. */
  add(state) {
    if (!state) return;
    const pts = this.#points;
    let last = pts.at(-1);
    const x = num(state.seq) ?? (last ? last.x + 1 : 0);
    if (last && x < last.x) {
      pts.length = 0;
      last = undefined;
    }
    const p = { x, pressure: num(state.pressureTokens), projected: num(state.projectedTokens),
      message: num(state.messageTokens), compactAt: num(state.compactAtTokens),
      capacity: num(state.capacity), compaction: false };
    const same = last && last.x === x;
    const prev = same ? pts.at(-2) : last;
    p.compaction = Boolean(prev && compacted(prev, p));
    if (same) pts[pts.length - 1] = p;
    else pts.push(p);
    if (pts.length > MAX_POINTS) this.#thin();
    this.#schedule();
  }

  /** Replaces the points with a session's history as the server keeps it: `[[seq, projected,
   * pressure, capacity, compactAt, compaction 0|1], …]`, oldest first. */
  load(history) {
    this.#points = [];
    this.append(history);
    this.#schedule();
  }

  /** Appends history points (as `load` takes them) after the last one: a point at the last seq
   * replaces it, one before it drops the points from there on (a history that starts again is
   * drawn again). The compaction marks are the server's. Thinned to the same bound as `add`. */
  append(history) {
    if (!Array.isArray(history)) return;
    for (const h of history) {
      const x = Array.isArray(h) ? num(h[0]) : null;
      if (x == null) continue;
      const pts = this.#points;
      const p = { x, projected: num(h[1]), pressure: num(h[2]), capacity: num(h[3]), compactAt: num(h[4]),
        message: null, compaction: h[5] === 1 || h[5] === true };
      while (pts.length && pts.at(-1).x > x) pts.pop();
      // The same seq again is that point's latest figures (a compaction's mark stays).
      if (pts.length && pts.at(-1).x === x && pts.pop().compaction) p.compaction = true;
      pts.push(p);
    }
    while (this.#points.length > MAX_POINTS) this.#thin();
    this.#schedule();
  }

  /** The last seq drawn, or null. */
  get lastSeq() { return this.#points.at(-1)?.x ?? null; }

  clear() {
    this.#points.length = 0;
    this.#schedule();
  }

  // Every two points after the first become the later one, which keeps a mark either had: the
  // points on each side of a drop survive, so the drop stays where it was.
  #thin() {
    const pts = this.#points;
    const out = [pts[0]];
    for (let i = 1; i < pts.length; i += 2) {
      const a = pts[i];
      const b = pts[i + 1];
      out.push(b ? { ...b, compaction: a.compaction || b.compaction } : a);
    }
    this.#points = out;
  }

  #schedule() {
    if (this.#queued) return;
    this.#queued = true;
    requestAnimationFrame(() => {
      this.#queued = false;
      this.draw();
    });
  }

  draw() {
    const pts = this.#points;
    const { grid, area, threshold, readings, projection, dots, marks, labels } = this.parts;
    const x0 = pts.length ? pts[0].x : 0;
    const x1 = pts.length ? pts.at(-1).x : 1;
    // The latest state holds until now: a fortieth of the width past the last point shows it.
    const end = x1 + Math.max(1, (x1 - x0) / 40);
    const span = end - x0;
    const capacity = pts.findLast((p) => p.capacity != null)?.capacity ?? null;
    // The window's scale when known; else what was seen, with a tenth more room above.
    const seen = Math.max(0, ...pts.flatMap((p) => [p.pressure ?? 0, p.projected ?? 0, p.compactAt ?? 0]));
    const top = Math.max(1, capacity == null ? Math.ceil((seen * 11) / 10) : Math.max(capacity, seen));
    const X = (x) => r1(M.left + ((x - x0) / span) * (W - M.left - M.right));
    const Y = (v) => r1(M.top + (1 - v / top) * (H - M.top - M.bottom));
    const base = Y(0);

    grid.replaceChildren(...[0, 0.25, 0.5, 0.75, 1].flatMap((f) => [
      node('line', { x1: M.left, x2: W - M.right, y1: Y(top * f), y2: Y(top * f) }),
      node('text', { x: M.left - 6, y: Y(top * f) + 3, 'text-anchor': 'end' }, compact.format(top * f)),
    ]));
    const path = (rs) => rs.map((r) => r.map(([x, v], i) => (i ? `H${X(x)}V${Y(v)}` : `M${X(x)} ${Y(v)}`)).join('')).join('');
    const project = runs(pts, 'projected', end);
    projection.replaceChildren(node('path', { d: path(project) }));
    area.replaceChildren(node('path', { d: project.map((r) => `M${X(r[0][0])} ${base}V${Y(r[0][1])}${
      r.slice(1).map(([x, v]) => `H${X(x)}V${Y(v)}`).join('')}V${base}Z`).join('') }));
    readings.replaceChildren(node('path', { d: path(runs(pts, 'pressure', end)) }));
    threshold.replaceChildren(node('path', { d: path(runs(pts, 'compactAt', end)) }));

    // A dot at each new provider reading (drawn small: a long session has hundreds).
    let reading = null;
    let d = '';
    for (const p of pts) {
      if (p.pressure != null && p.pressure !== reading) d += `M${r1(X(p.x) - 1.25)} ${Y(p.pressure)}a1.25 1.25 0 1 0 2.5 0a1.25 1.25 0 1 0 -2.5 0`;
      reading = p.pressure ?? reading;
    }
    dots.replaceChildren(node('path', { d }));

    const compactions = pts.filter((p) => p.compaction);
    marks.replaceChildren(...compactions.map((p) => {
      const g = node('g', { class: 'compaction', 'data-seq': p.x });
      // The label on the side with room for it.
      const right = X(p.x) < W - M.right - 60;
      g.append(node('line', { x1: X(p.x), x2: X(p.x), y1: M.top, y2: base }),
        node('text', { x: X(p.x) + (right ? 3 : -3), y: M.top + 9, 'text-anchor': right ? 'start' : 'end' },
          'compacted'));
      return g;
    }));

    const now = pts.at(-1);
    const at = pts.findLast((p) => p.compactAt != null);
    const ends = pts.length ? [node('text', { x: M.left, y: H - 6 }, `seq ${x0}`),
      node('text', { x: W - M.right, y: H - 6, 'text-anchor': 'end' }, `seq ${x1}`)] : [];
    if (capacity === top) ends.push(node('text', { x: W - M.right - 2, y: Y(top) - 3, 'text-anchor': 'end' }, 'window'));
    if (at) ends.push(node('text', { class: 'threshold-label', x: W - M.right - 2, y: Y(at.compactAt) - 4,
      'text-anchor': 'end' }, `auto-compacts at ~${compact.format(at.compactAt)}`));
    labels.replaceChildren(...ends);

    const summary = !pts.length ? 'No reading yet'
      : `The session from seq ${x0} to ${x1}: ${compactions.length} compaction${compactions.length === 1 ? '' : 's'}`
        + (now.projected != null ? `, now ~${whole.format(now.projected)} tokens` : '')
        + (capacity != null ? ` of ${whole.format(capacity)}` : '')
        + (at ? `, auto-compacts at ~${whole.format(at.compactAt)}` : '');
    this.title.textContent = summary;
    this.svg.setAttribute('aria-label', summary);
    Object.assign(this.svg.dataset, { points: pts.length, compactions: compactions.length,
      lastSeq: now ? now.x : '', top });
  }
}
