// The fleet board: every session the server keeps, one row each, ranked by how close it is to
// its automatic compaction. The rows are held as entries (one per session, patched in place by
// each delta); the view is virtualised: a spacer as tall as all the rows, and only the rows in
// view (plus OVERSCAN each side) in the DOM, each in a pooled element that is re-pointed, never
// rebuilt, as the board scrolls. Sorting, filtering and drawing happen at most once an animation
// frame, however many deltas came.
import { ring, drawRing, spark, sparkPaths, drawSpark } from './spark.js';

export const ROW_H = 36;
const OVERSCAN = 8;
/** The bands the header counts: within DUE tokens of the compaction; occupancy at least HIGH. */
export const DUE = 10000;
export const HIGH = 0.9;

const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v) => (typeof v === 'string' ? v : '');
const nf = new Intl.NumberFormat('en');
const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumSignificantDigits: 3 });
const pct = new Intl.NumberFormat('en', { style: 'percent', maximumFractionDigits: 0 });
// A text's sort key: lower case, its numbers padded, so that s-9 comes before s-10 (a number
// only where it stands alone: the digits of a hex id keep their place).
const textKey = (s) => (s ? s.toLowerCase().replace(/(?<![\p{L}\d])\d{1,15}(?![\p{L}\d])/gu, (d) => d.padStart(15, '0')) : null);

/** "12 s ago", "3 min ago", "2 h ago", "4 d ago"; "—" when unknown. */
export function ago(ms) {
  if (ms == null || !Number.isFinite(ms)) return '—';
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.floor(m / 60);
  return h < 48 ? `${h} h ago` : `${Math.floor(h / 24)} d ago`;
}

/** A long id as its head and tail (the whole on hover). */
export const short = (id) => (id.length > 20 ? `${id.slice(0, 9)}…${id.slice(-6)}` : id);

/** The last compaction in words ("last auto: 160,000 → 31,000 tokens"), "" when none yet. */
export function compactionText(r) {
  if (!r || !(num(r.compactions) > 0)) return '';
  const before = num(r.lastCompactBeforeTokens);
  const after = num(r.lastCompactAfterTokens);
  const how = str(r.lastCompactTrigger) || 'compaction';
  const figures = before == null && after == null ? ''
    : `: ${before == null ? '?' : nf.format(before)} → ${after == null ? '?' : nf.format(after)} tokens`;
  return `last ${how}${figures}`;
}

/** `~used / window`: used is the projection (marked ~), else the provider's reading. */
export function usedText(e) {
  if (e.used == null) return '—';
  return `${e.projected != null ? '~' : ''}${compact.format(e.used)} / ${e.cap == null ? '?' : compact.format(e.cap)}`;
}

// The columns, in order: the key a header sorts by (none for the drawings) and the order a
// first click picks (the most urgent first).
const COLUMNS = [
  { key: 'session', label: 'Session', first: 'asc' },
  { key: 'agent', label: 'Agent', first: 'asc' },
  { key: 'model', label: 'Model', first: 'asc' },
  { key: 'ring', label: 'Ring', hide: true },
  { key: 'occupancy', label: 'Used', first: 'desc', end: true },
  { key: 'used', label: 'Tokens / window', first: 'desc', end: true },
  { key: 'until', label: 'To compaction', first: 'asc', end: true },
  { key: 'compactions', label: 'Compactions', short: 'Compacted', first: 'desc', end: true, cell: 'comp' },
  { key: 'active', label: 'Last activity', first: 'desc', end: true },
  { key: 'spark', label: 'History' },
  { key: 'alerts', label: 'Alerts', first: 'desc', short: '!' },
];
// Text keys are made when a sort first needs them, not for every row that comes.
const sessionKey = (e) => (e.sessionKey ??= textKey(e.session));
const SORT_VALUE = {
  session: sessionKey,
  agent: (e) => (e.agentKey === undefined ? (e.agentKey = textKey(e.agent)) : e.agentKey),
  model: (e) => (e.modelKey === undefined ? (e.modelKey = textKey(e.model)) : e.modelKey),
  occupancy: (e) => e.occ,
  used: (e) => e.used,
  until: (e) => e.until,
  compactions: (e) => e.comp,
  active: (e) => e.active,
  alerts: (e) => e.alerts.length + (e.error ? 0.5 : 0),
};
export const SORT_KEYS = Object.keys(SORT_VALUE);

// The default rank, and every sort's tie-break: closest to compaction first (unknown last), then
// fullest first, then by id.
function rank(a, b) {
  if (a.until !== b.until) {
    if (a.until == null) return 1;
    if (b.until == null) return -1;
    return a.until - b.until;
  }
  if (a.occ !== b.occ) {
    if (a.occ == null) return 1;
    if (b.occ == null) return -1;
    return b.occ - a.occ;
  }
  const x = sessionKey(a);
  const y = sessionKey(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

// Unknown values go last in either order.
function comparator(key, order) {
  if (key === 'until' && order === 'asc') return rank;
  const get = SORT_VALUE[key];
  const dir = order === 'desc' ? -1 : 1;
  return (a, b) => {
    const x = get(a);
    const y = get(b);
    if (x !== y) {
      if (x == null) return 1;
      if (y == null) return -1;
      return x < y ? -dir : dir;
    }
    return rank(a, b);
  };
}

// `rest` and `moved`, both in order, as one: each of `moved` where a binary search puts it.
function place(rest, moved, cmp) {
  if (!moved.length) return rest;
  const out = [];
  let from = 0;
  for (const e of moved) {
    let lo = from;
    let hi = rest.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cmp(rest[mid], e) <= 0) lo = mid + 1;
      else hi = mid;
    }
    for (let i = from; i < lo; i += 1) out.push(rest[i]);
    out.push(e);
    from = lo;
  }
  for (let i = from; i < rest.length; i += 1) out.push(rest[i]);
  return out;
}

// An entry: the row as sent, and what sorting, filtering and drawing read, worked out once per
// new state of the row.
function derive(e, row) {
  const r = row.record && typeof row.record === 'object' ? row.record : null;
  e.row = row;
  e.rev += 1;
  e.rec = r;
  e.until = num(r?.untilCompactTokens);
  e.occ = num(r?.contextOccupancy);
  e.projected = num(r?.projectedTokens);
  e.used = e.projected ?? num(r?.pressureTokens);
  e.cap = num(r?.capacity);
  e.compactAt = num(r?.compactAtTokens);
  e.comp = num(r?.compactions);
  e.lastComp = compactionText(r);
  e.seq = num(row.seq) ?? num(r?.seq);
  const agent = str(row.agent);
  const model = str(row.model);
  if (agent !== e.agent || model !== e.model) {
    e.agent = agent;
    e.model = model;
    e.agentKey = undefined;
    e.modelKey = undefined;
    e.hay = null;
  }
  e.live = row.live !== false;
  e.active = num(row.active);
  e.readAt = num(row.readAt);
  e.alerts = Array.isArray(row.alerts) ? row.alerts.filter((a) => typeof a === 'string') : [];
  e.error = row.error && typeof row.error === 'object' ? row.error : null;
  e.spark = Array.isArray(row.spark) ? row.spark : [];
  e.due = e.until != null && e.until < DUE;
  e.high = e.occ != null && e.occ >= HIGH;
}

// What the filter looks in: the session, agent and model, in lower case.
const hay = (e) => (e.hay ??= `${e.session}\n${e.agent}\n${e.model}`.toLowerCase());

// One row element, cloned from a prototype: its cells made once; `fill` re-points them.
const CELLS = ['session', 'agent', 'model', 'ring', 'occ', 'used', 'until', 'comp', 'active', 'spark', 'alert'];
const TEXTS = ['session', 'agent', 'model', 'occ', 'used', 'until', 'comp', 'active'];
let prototype = null;
function makeRow(board) {
  if (!prototype) {
    prototype = document.createElement('div');
    prototype.className = 'row';
    prototype.setAttribute('role', 'row');
    prototype.tabIndex = -1;
    for (const name of CELLS) {
      const c = document.createElement('span');
      c.className = `cell c-${name}`;
      c.setAttribute('role', 'gridcell');
      if (TEXTS.includes(name)) c.append(document.createTextNode(''));
      prototype.append(c);
    }
    const mark = document.createElement('span');
    mark.className = 'mark';
    mark.setAttribute('role', 'img');
    mark.textContent = '!';
    mark.hidden = true;
    prototype.lastChild.append(mark);
  }
  const el = prototype.cloneNode(true);
  const c = {};
  CELLS.forEach((name, i) => { c[name] = el.children[i]; });
  // Each text cell's one text node: setting its data is the cheapest change of a text.
  el.texts = Object.fromEntries(TEXTS.map((name) => [name, c[name].firstChild]));
  c.mark = c.alert.firstChild;
  c.ringSvg = ring();
  c.ring.append(c.ringSvg);
  c.sparkSvg = spark();
  c.spark.append(c.sparkSvg);
  el.cells = c;
  el.text = {};
  el.idx = -1;
  el.entry = null;
  el.rev = -1;
  el.cls = '';
  el.addEventListener('click', () => board.activate(el));
  return el;
}

function setText(el, key, text) {
  if (el.text[key] !== text) {
    el.text[key] = text;
    el.texts[key].data = text;
  }
}

// What a row shows of an entry, worked out once per state of it (a row scrolled past again, or
// moved by a re-sort, costs no formatting).
function view(e) {
  if (e.viewRev === e.rev) return e.view;
  e.viewRev = e.rev;
  const alerts = e.alerts.length ? e.alerts.join(', ') : '';
  const warn = e.error ? `warning: ${str(e.error.error) || 'context/error'}` : '';
  e.view = {
    short: e.short ??= short(e.session),
    agent: e.agent || '—',
    model: e.model || '—',
    occ: e.occ == null ? '—' : pct.format(e.occ),
    used: usedText(e),
    until: e.until == null ? '—' : nf.format(e.until),
    comp: e.comp == null ? '—' : `${nf.format(e.comp)}×`,
    mark: e.cap > 0 && e.compactAt != null ? e.compactAt / e.cap : null,
    spark: sparkPaths(e.spark, e.cap, e.compactAt),
    tip: [alerts, warn].filter(Boolean).join(' · '),
    cls: `row${e.due ? ' due' : ''}${e.high ? ' high' : ''}${e.live ? '' : ' idle'}${e.error ? ' warning' : ''}`,
  };
  return e.view;
}

export class Board {
  /** Every session held: id -> entry. */
  entries = new Map();
  filter = '';
  showIdle = false;
  sort = { key: 'until', order: 'asc' };
  /** The session whose detail is open (its row is marked), or null. */
  open = null;
  /** Bands of the live sessions, as of the last frame. */
  counts = { live: 0, due: 0, high: 0, idle: 0 };
  renders = 0;

  #order = []; // every entry, as last sorted
  #moved = []; // entries new or changed since then (flagged `moved`)
  #removed = false;
  #full = true; // the order must be made again whole (a new sort, a whole board)
  #shown = []; // the entries that pass the filter, in order
  #fresh = []; // entries with a new state since the last frame
  #resort = false;
  #refilter = false;
  #queued = false;
  #pool = []; // slot -> row element; row i lives in slot i % pool.length
  #attached = 0;
  #headH = 0;
  #viewH = 0;
  #focus = null; // the session the board's one tabbable row shows (roving tabindex)
  #cmp = rank;

  /**
   * @param {HTMLElement} root the scroll container (#board)
   * @param {{onOpen: (id: string) => void, onFrame: (board: Board, visibleFresh: object[]) => void,
   *   now: () => number}} hooks
   */
  constructor(root, hooks) {
    this.root = root;
    this.hooks = hooks;
    root.setAttribute('role', 'grid');
    root.setAttribute('aria-label', 'Sessions');
    root.setAttribute('aria-colcount', String(COLUMNS.length));
    root.tabIndex = -1;
    root.style.setProperty('--row-h', `${ROW_H}px`);
    this.head = document.createElement('div');
    this.head.className = 'head';
    this.head.setAttribute('role', 'row');
    this.head.setAttribute('aria-rowindex', '1');
    this.headers = new Map();
    for (const col of COLUMNS) {
      const h = document.createElement('span');
      h.className = `cell c-${col.cell ?? (col.key === 'occupancy' ? 'occ' : col.key === 'alerts' ? 'alert' : col.key)}`;
      h.setAttribute('role', 'columnheader');
      if (col.first) {
        const b = document.createElement('button');
        b.type = 'button';
        b.textContent = col.short ?? col.label;
        if (col.short) {
          b.setAttribute('aria-label', col.label);
          b.title = col.label;
        }
        b.addEventListener('click', () => this.sortBy(col.key));
        h.append(b);
        h.setAttribute('aria-sort', 'none');
        this.headers.set(col.key, h);
      } else if (col.hide) {
        h.setAttribute('aria-label', col.label);
      } else h.textContent = col.label;
      if (col.end) h.classList.add('end');
      this.head.append(h);
    }
    this.body = document.createElement('div');
    this.body.className = 'rows';
    this.body.setAttribute('role', 'rowgroup');
    const headGroup = document.createElement('div');
    headGroup.className = 'head-group';
    headGroup.setAttribute('role', 'rowgroup');
    headGroup.append(this.head);
    root.replaceChildren(headGroup, this.body);
    this.#markSort();

    root.addEventListener('scroll', () => this.#schedule(), { passive: true });
    root.addEventListener('keydown', (e) => this.#key(e));
    root.addEventListener('focusin', (e) => {
      const el = e.target.closest?.('.row[data-session]');
      if (el && el.entry) this.#focus = el.entry.session;
    });
    new ResizeObserver(() => this.#measure()).observe(root);
    this.#measure();
    // Relative times tick on their own, in the rows in view only.
    setInterval(() => this.#times(), 2000);
  }

  /** Rows in the DOM. */
  get rendered() { return this.#attached; }
  /** Entries that pass the filter and the idle toggle. */
  get shown() { return this.#shown.length; }
  /** A `board` event: every row replaced. A held session whose state moved is news. */
  replace(rows) {
    const seen = new Set();
    for (const row of Array.isArray(rows) ? rows : []) {
      if (!row || typeof row.session !== 'string' || seen.has(row.session)) continue;
      seen.add(row.session);
      const held = this.entries.get(row.session);
      this.#upsert(row, held != null && held.readAt !== num(row.readAt));
    }
    for (const id of [...this.entries.keys()]) if (!seen.has(id)) this.#drop(id);
    // A whole board is rare (the first message, a client fallen behind, a reset): drawn at once,
    // not a frame later.
    this.#full = true;
    this.#frame();
  }

  /** A `delta` event: new states (each one news) and sessions gone. */
  apply(rows, gone) {
    for (const row of Array.isArray(rows) ? rows : []) {
      if (row && typeof row.session === 'string') this.#upsert(row, true);
    }
    for (const id of Array.isArray(gone) ? gone : []) if (typeof id === 'string') this.#drop(id);
    this.#schedule(true);
  }

  #upsert(row, fresh) {
    let e = this.entries.get(row.session);
    if (!e) {
      e = { session: row.session, sessionKey: null, agentKey: undefined, modelKey: undefined, hay: null,
        agent: null, model: null, rev: 0, fresh: false, dead: false, moved: false };
      this.entries.set(row.session, e);
    }
    derive(e, row);
    if (!e.moved) {
      e.moved = true;
      this.#moved.push(e);
    }
    if (fresh && !e.fresh) {
      e.fresh = true;
      this.#fresh.push(e);
    }
  }

  #drop(id) {
    const e = this.entries.get(id);
    if (!e) return;
    this.entries.delete(id);
    e.dead = true;
    this.#removed = true;
  }

  setFilter(q) {
    const f = String(q ?? '').trim().toLowerCase();
    if (f === this.filter) return;
    this.filter = f;
    this.root.scrollTop = 0;
    this.#refilter = true;
    this.#schedule();
  }

  setShowIdle(on) {
    if (Boolean(on) === this.showIdle) return;
    this.showIdle = Boolean(on);
    this.#refilter = true;
    this.#schedule();
  }

  /** Sorts by a column; the same column again reverses it. */
  sortBy(key, order) {
    if (!SORT_VALUE[key]) return;
    const col = COLUMNS.find((c) => c.key === key);
    const next = order === 'asc' || order === 'desc' ? order
      : this.sort.key === key ? (this.sort.order === 'asc' ? 'desc' : 'asc') : col.first;
    this.sort = { key, order: next };
    this.#cmp = comparator(key, next);
    this.#markSort();
    this.#full = true;
    this.#schedule(true);
  }

  #markSort() {
    for (const [key, h] of this.headers) {
      h.setAttribute('aria-sort', key === this.sort.key ? (this.sort.order === 'asc' ? 'ascending' : 'descending') : 'none');
    }
  }

  /** Marks the open session's row. */
  setOpen(id) {
    this.open = id;
    this.#forceRepaint();
  }

  /** Scrolls the board so that a session's row is in view; focuses it when asked. */
  reveal(id, focus = false) {
    this.#flush();
    const i = this.#shown.findIndex((e) => e.session === id);
    if (i < 0) return false;
    this.#into(i, 'center');
    this.#paint();
    if (focus) this.#focusIndex(i);
    this.#schedule();
    return true;
  }

  /** Focuses a session's row when it is in the DOM, else the board. */
  focus(id) {
    const el = this.#pool.find((r) => r.isConnected && r.entry?.session === id);
    if (el) {
      this.#focus = id;
      this.#tabbable();
      el.focus({ preventScroll: true });
    } else this.root.focus({ preventScroll: true });
  }

  activate(el) {
    if (!el.entry) return;
    this.#focus = el.entry.session;
    this.#tabbable();
    el.focus({ preventScroll: true });
    this.hooks.onOpen(el.entry.session);
  }

  #schedule(data = false) {
    if (data) this.#resort = true;
    if (this.#queued) return;
    this.#queued = true;
    requestAnimationFrame(() => { if (this.#queued) this.#frame(); });
  }

  // Sorts and filters when the data, the sort or the filter changed. A delta re-ranks only the
  // rows it moved: each is placed by a binary search in the order of the others (a few hundred
  // comparisons, not a sort of every row).
  #flush() {
    if (this.#full || this.#moved.length > this.#order.length / 4) {
      this.#order = [...this.entries.values()].sort(this.#cmp);
      this.#full = false;
      this.#resort = true;
    } else if (this.#moved.length || this.#removed) {
      const rest = this.#order.filter((e) => !e.dead && !e.moved);
      const moved = this.#moved.filter((e) => !e.dead).sort(this.#cmp);
      this.#order = place(rest, moved, this.#cmp);
      this.#resort = true;
    }
    for (const e of this.#moved) e.moved = false;
    this.#moved = [];
    this.#removed = false;
    if (this.#resort) {
      this.#resort = false;
      this.#refilter = true;
      this.#count();
    }
    if (this.#refilter) {
      const q = this.filter;
      const idle = this.showIdle;
      this.#shown = !q && idle ? this.#order.slice()
        : this.#order.filter((e) => (idle || e.live) && (!q || hay(e).includes(q)));
      this.#refilter = false;
      this.body.style.height = `${this.#shown.length * ROW_H}px`;
      this.root.setAttribute('aria-rowcount', String(this.#shown.length + 1));
    }
  }

  #count() {
    let live = 0;
    let due = 0;
    let high = 0;
    for (const e of this.#order) {
      if (!e.live) continue;
      live += 1;
      if (e.due) due += 1;
      if (e.high) high += 1;
    }
    this.counts = { live, due, high, idle: this.#order.length - live };
  }

  #frame() {
    this.#queued = false;
    // Read before anything is written, so that reading forces no layout.
    const top = this.root.scrollTop;
    const hadFocus = this.root.contains(document.activeElement) && document.activeElement !== this.root;
    this.#flush();
    const seen = this.#paint(top);
    this.renders += 1;
    for (const e of this.#fresh) e.fresh = false;
    this.#fresh = [];
    // Keyboard focus follows its session when a re-sort moves it within the rows in view.
    if (hadFocus && this.#focus) {
      const el = this.#pool.find((r) => r.isConnected && r.entry?.session === this.#focus);
      if (el && document.activeElement !== el) el.focus({ preventScroll: true });
    }
    this.hooks.onFrame(this, seen);
  }

  #measure() {
    this.#headH = this.head.offsetHeight;
    this.#viewH = Math.max(0, this.root.clientHeight - this.#headH);
    const size = Math.ceil(this.#viewH / ROW_H) + 2 * OVERSCAN + 2;
    if (size !== this.#pool.length) {
      // A new pool size re-maps every row to its slot: the old elements are re-used as they are.
      const old = this.#pool;
      this.#pool = new Array(size);
      for (let i = 0; i < size && i < old.length; i += 1) {
        this.#pool[i] = old[i];
        if (old[i]) old[i].idx = -1;
      }
      for (let i = size; i < old.length; i += 1) {
        if (old[i]?.isConnected) {
          old[i].remove();
          this.#attached -= 1;
        }
      }
    }
    this.#schedule();
  }

  // The rows in view [first, last), and those drawn [start, end): the view and OVERSCAN rows
  // each side, and always as many rows as the pool has when there are that many, so that
  // scrolling re-points rows and never adds or removes one.
  #range(top) {
    const n = this.#shown.length;
    const size = this.#pool.length;
    const first = Math.min(n, Math.max(0, Math.floor(top / ROW_H)));
    const last = Math.min(n, Math.ceil((top + this.#viewH) / ROW_H));
    if (n <= size) return { n, first, last, start: 0, end: n };
    const start = Math.max(0, Math.min(first - OVERSCAN, n - size));
    return { n, first, last, start, end: start + size };
  }

  // Draws the rows in view into their slots; returns the fresh entries drawn in view.
  #paint(top = this.root.scrollTop) {
    const { first, last, start, end } = this.#range(top);
    const pool = this.#pool;
    const size = pool.length;
    const seen = [];
    const used = new Uint8Array(size);
    for (let i = start; i < end && i - start < size; i += 1) {
      const slot = i % size;
      used[slot] = 1;
      let el = pool[slot];
      if (!el) el = pool[slot] = makeRow(this);
      const e = this.#shown[i];
      if (el.idx !== i) {
        el.idx = i;
        el.style.transform = `translateY(${i * ROW_H}px)`;
        el.setAttribute('aria-rowindex', String(i + 2));
      }
      if (el.entry !== e || el.rev !== e.rev) {
        if (el.entry !== e && el === document.activeElement) this.root.focus({ preventScroll: true });
        this.#fill(el, e);
        if (e.fresh && i >= first && i < last) seen.push(e);
      }
      if (!el.isConnected) {
        this.body.append(el);
        this.#attached += 1;
      }
    }
    for (let s = 0; s < size; s += 1) {
      const el = pool[s];
      if (!used[s] && el && el.isConnected) {
        if (el === document.activeElement) this.root.focus({ preventScroll: true });
        el.remove();
        el.idx = -1;
        this.#attached -= 1;
      }
    }
    this.#tabbable(top);
    return seen;
  }

  // One row is tabbable: the focused session's when in the DOM, else the first in view.
  #tabbable(top = this.root.scrollTop) {
    let pick = null;
    let firstIn = null;
    for (const el of this.#pool) {
      if (!el || !el.isConnected) continue;
      if (el.entry?.session === this.#focus) pick = el;
      if (el.idx * ROW_H >= top - 1 && (!firstIn || el.idx < firstIn.idx)) firstIn = el;
    }
    pick = pick || firstIn;
    for (const el of this.#pool) {
      if (!el || !el.isConnected) continue;
      const want = el === pick ? 0 : -1;
      if (el.tabIndex !== want) el.tabIndex = want;
    }
  }

  #forceRepaint() {
    for (const el of this.#pool) if (el) el.rev = -1;
    this.#schedule();
  }

  #fill(el, e) {
    const c = el.cells;
    const v = view(e);
    el.entry = e;
    el.rev = e.rev;
    if (el.session !== e.session) {
      el.session = e.session;
      el.dataset.session = e.session;
      c.session.title = e.session;
    }
    setText(el, 'session', v.short);
    setText(el, 'agent', v.agent);
    setText(el, 'model', v.model);
    if (el.text.modelTitle !== e.model) c.model.title = el.text.modelTitle = e.model;
    drawRing(c.ringSvg, e.occ, v.mark);
    setText(el, 'occ', v.occ);
    setText(el, 'used', v.used);
    setText(el, 'until', v.until);
    setText(el, 'comp', v.comp);
    if (el.text.compTitle !== e.lastComp) c.comp.title = el.text.compTitle = e.lastComp;
    setText(el, 'active', ago(e.active == null ? null : this.hooks.now() - e.active));
    drawSpark(c.sparkSvg, v.spark);
    if (el.text.tip !== v.tip) {
      const tip = el.text.tip = v.tip;
      c.mark.hidden = !tip;
      c.alert.title = tip;
      if (tip) c.mark.setAttribute('aria-label', `alert: ${tip}`);
    }
    const open = e.session === this.open;
    const cls = open ? `${v.cls} open` : v.cls;
    if (el.cls !== cls) {
      el.cls = cls;
      el.className = cls;
      if (el.selected !== open) el.setAttribute('aria-selected', String(el.selected = open));
    }
  }

  #times() {
    const now = this.hooks.now();
    for (const el of this.#pool) {
      if (el && el.isConnected && el.entry) {
        setText(el, 'active', ago(el.entry.active == null ? null : now - el.entry.active));
      }
    }
  }

  // Scrolls so that row i is in view ('nearest' moves as little as it can).
  #into(i, how = 'nearest') {
    const top = i * ROW_H;
    const st = this.root.scrollTop;
    if (how === 'center') this.root.scrollTop = Math.max(0, top - (this.#viewH - ROW_H) / 2);
    else if (top < st) this.root.scrollTop = top;
    else if (top + ROW_H > st + this.#viewH) this.root.scrollTop = top + ROW_H - this.#viewH;
  }

  #focusIndex(i) {
    const n = this.#shown.length;
    if (!n) return;
    const j = Math.max(0, Math.min(n - 1, i));
    this.#into(j);
    this.#paint();
    const el = this.#pool[j % this.#pool.length];
    if (el && el.idx === j) {
      this.#focus = el.entry.session;
      this.#tabbable();
      el.focus({ preventScroll: true });
    }
  }

  #key(ev) {
    const keys = ['ArrowDown', 'ArrowUp', 'PageDown', 'PageUp', 'Home', 'End', 'Enter', ' '];
    if (!keys.includes(ev.key) || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    if (ev.target.closest?.('.head')) return; // the sort buttons keep their own keys
    const el = ev.target.closest?.('.row[data-session]');
    this.#flush();
    let i = el && el.entry ? this.#shown.indexOf(el.entry) : this.#shown.findIndex((e) => e.session === this.#focus);
    if (ev.key === 'Enter' || ev.key === ' ') {
      if (!el) return;
      ev.preventDefault();
      this.activate(el);
      return;
    }
    ev.preventDefault();
    const page = Math.max(1, Math.floor(this.#viewH / ROW_H) - 1);
    if (i < 0) i = Math.floor(this.root.scrollTop / ROW_H) - (ev.key === 'ArrowDown' ? 1 : 0);
    const to = { ArrowDown: i + 1, ArrowUp: i - 1, PageDown: i + page, PageUp: i - page, Home: 0,
      End: this.#shown.length - 1 }[ev.key];
    this.#focusIndex(to);
  }
}
