// The page `agent-fold serve` serves: a fleet board of every session the server keeps, one row
// each, the closest to its automatic compaction first (board.js), and one session's detail
// beside it (detail.js: its <context-meter>, figures, chart and folded frames), all fed from the
// server's /events stream (`board`: every row; `delta`: the rows that changed, and those gone).
// The meters take the browser's language unless ?lang= names one; the page's own words are English.
import { Board, DUE } from './board.js';
import { Detail } from './detail.js';

const LATENCY_KEPT = 10000;

const lang = new URLSearchParams(location.search).get('lang');
const nf = new Intl.NumberFormat('en');
const $ = (id) => document.getElementById(id);
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
let skew = 0; // the server's clock less ours, from each message's `now`
const now = () => Date.now() + skew;

// What tests and curious people can read.
const page = window.agentFold = {
  connected: false, status: null, version: null, rows: 0, shown: 0, rendered: 0,
  sort: { key: 'until', order: 'asc' }, open: null, latency: [], renders: 0, firstRender: null,
  events: 0, lastEventId: '',
};
let latencyAt = 0; // where the ring of latencies writes next, once full

function sample(ms) {
  if (page.latency.length < LATENCY_KEPT) page.latency.push(ms);
  else {
    page.latency[latencyAt] = ms;
    latencyAt = (latencyAt + 1) % LATENCY_KEPT;
  }
}

const layout = $('layout');
const board = new Board($('board'), { now, onOpen: (id) => open(id), onFrame: frame });
const detail = new Detail($('detail'), { lang, now });
let started = false; // a first board came
const autoOpened = new Set();

// After each board render: the hooks, the header's counts, and when the rows drawn in view
// reached the screen (the frame after this one).
function frame(b, seen) {
  page.rows = b.entries.size;
  page.shown = b.shown;
  page.rendered = b.rendered;
  page.sort = { ...b.sort };
  page.renders = b.renders;
  if (page.firstRender == null && b.entries.size > 0) page.firstRender = performance.now();
  if (seen.length) {
    const stamps = seen.map((e) => e.readAt);
    requestAnimationFrame(() => {
      const t = performance.timeOrigin + performance.now();
      for (const at of stamps) if (at != null) sample(t - at);
    });
  }
  counts(b);
  const few = b.entries.size <= 3;
  layout.classList.toggle('few', few);
  if (few) layout.style.setProperty('--few-rows', String(Math.max(1, b.shown)));
}

let countsKey = '';
function counts(b) {
  const { live, due, high, idle } = b.counts;
  const shown = b.filter || b.showIdle ? `${nf.format(b.shown)} shown` : '';
  const key = `${live}|${due}|${high}|${idle}|${shown}|${b.entries.size}`;
  if (key === countsKey) return;
  countsKey = key;
  const band = (n, cls, words) => {
    const s = document.createElement('span');
    s.className = n ? cls : 'none';
    s.textContent = `${nf.format(n)} ${words}`;
    return s;
  };
  $('counts-bands').replaceChildren(
    `Live: ${nf.format(live)} session${live === 1 ? '' : 's'}`, ' · ',
    band(due, 'due', `within ${DUE / 1000}k of compaction`), ' · ',
    band(high, 'high', 'over 90%'),
  );
  $('counts-shown').textContent = shown;
  $('idle-count').textContent = idle ? `(${nf.format(idle)})` : '';
  const empty = $('empty');
  empty.hidden = b.shown > 0;
  empty.textContent = !b.entries.size ? 'No session yet: its records will show here as they come.'
    : b.filter ? `No session matches “${b.filter}”${b.showIdle ? '' : ' among the live ones'}.`
      : 'No live session: the idle ones show with “show idle”.';
}

function status(s) {
  if (!s || typeof s !== 'object') return;
  const text = (v) => (typeof v === 'string' ? v : '');
  page.status = s;
  $('status').dataset.state = text(s.state);
  $('message').textContent = text(s.message);
  $('source').textContent = text(s.source);
  $('counts').textContent = num(s.records) != null ? `${nf.format(s.records)} read` : '';
  $('skipped').textContent = num(s.skipped) ? `${nf.format(s.skipped)} skipped`
    + (text(s.lastSkipped) ? ` (last: ${s.lastSkipped})` : '') : '';
  // The module's file name only (the whole path on hover): the line stays short.
  const module = $('module');
  module.textContent = text(s.module) ? `folded by the ${s.module.replace(/ \/\S*\//, ' ')}` : '';
  module.title = text(s.module);
}

// The detail pane, and the hash that keeps it over a reload: #session=<percent-encoded id>.
function hashSession() {
  const m = /^#session=(.+)$/.exec(location.hash);
  if (!m) return null;
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return null;
  }
}

function open(id) {
  detail.open(id, board.entries.get(id)?.row ?? null);
  board.setOpen(id);
  page.open = id;
  layout.classList.add('has-detail');
  const hash = `#session=${encodeURIComponent(id)}`;
  if (location.hash !== hash) history.replaceState(null, '', hash);
}

function close() {
  if (!detail.id) return;
  detail.close();
  board.setOpen(null);
  page.open = null;
  layout.classList.remove('has-detail');
  if (location.hash) history.replaceState(null, '', location.pathname + location.search);
}

window.addEventListener('hashchange', () => {
  const id = hashSession();
  if (id == null) close();
  else if (board.entries.has(id)) {
    open(id);
    board.reveal(id);
  }
});
document.addEventListener('keydown', (e) => {
  if (e.key !== 'Escape' || !detail.id || e.defaultPrevented) return;
  if (e.target === $('filter') && $('filter').value) return; // Escape clears the filter first
  const id = detail.id;
  close();
  board.focus(id);
});
$('detail-close').addEventListener('click', () => {
  const id = detail.id;
  close();
  board.focus(id);
});
$('filter').addEventListener('input', (e) => board.setFilter(e.target.value));
$('show-idle').addEventListener('change', (e) => board.setShowIdle(e.target.checked));
// A reload keeps what the form kept.
board.setFilter($('filter').value);
board.setShowIdle($('show-idle').checked);

// After the rows changed: the open session follows its row (or closes with it), a session named
// by the hash opens once the first board says it exists, and a lone session opens by itself.
function changed(rows, first) {
  const id = detail.id;
  if (id) {
    const e = board.entries.get(id);
    if (!e) close();
    else if (rows.some((r) => r && r.session === id)) {
      detail.update(e.row);
      detail.pull();
    }
  }
  if (first) {
    const want = hashSession();
    if (want != null) {
      if (board.entries.has(want)) {
        open(want);
        board.reveal(want);
      } else history.replaceState(null, '', location.pathname + location.search);
    }
  }
  if (!detail.id && board.entries.size === 1) {
    const [only] = board.entries.keys();
    if (!autoOpened.has(only)) {
      autoOpened.add(only);
      open(only);
    }
  }
}

function parse(e) {
  page.events += 1;
  page.lastEventId = e.lastEventId;
  let d = null;
  try {
    d = JSON.parse(e.data);
  } catch {
    return null;
  }
  if (!d || typeof d !== 'object') return null;
  if (num(d.v) != null) page.version = d.v;
  if (num(d.now) != null) skew = d.now - Date.now();
  return d;
}

const source = new EventSource('/events');
source.addEventListener('board', (e) => {
  const d = parse(e);
  if (!d) return;
  const rows = Array.isArray(d.rows) ? d.rows : [];
  board.replace(rows);
  status(d.status);
  changed(rows, !started);
  started = true;
});
source.addEventListener('delta', (e) => {
  const d = parse(e);
  if (!d) return;
  const rows = Array.isArray(d.rows) ? d.rows : [];
  board.apply(rows, d.gone);
  if (d.status) status(d.status);
  changed(rows, false);
});
source.onopen = () => {
  page.connected = true;
  if (page.status) status(page.status); // a resume does not send the status again
};
source.onerror = () => {
  // EventSource reconnects by itself, sending Last-Event-ID.
  page.connected = false;
  $('status').dataset.state = 'error';
  $('message').textContent = 'lost the connection to the server: reconnecting…';
};
