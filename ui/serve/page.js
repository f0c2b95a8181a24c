// The page `agent-fold serve` serves: one card per session, newest first (by when first seen),
// each with its <context-meter> in a mock composer, a figures line, the chart of the session so
// far and its latest folded frames, all fed from the server's /events stream.
// Bounded: at most MAX_CARDS cards (the least recently active one goes), each chart capped.
// The meters take the browser's language unless ?lang= names one; the page's own words are English.
import { ContextMeter } from '@agent-fold/context-meter';
import { SessionChart } from './chart.js';

const MAX_CARDS = 24;
const FRAMES_SHOWN = 8;

const lang = new URLSearchParams(location.search).get('lang');
const nf = new Intl.NumberFormat('en');
const $ = (id) => document.getElementById(id);
const main = $('sessions');
const cards = new Map(); // session id -> its card's parts
let clock = 0; // activity order: a card's `active` is the clock when it last changed
let setAside = 0;
// What tests and curious people can read: events seen, the last id, connection state.
const page = window.agentFold = { events: 0, lastEventId: '', connected: false, status: null, maxCards: MAX_CARDS };

// "2026-02-12T14:34:19.464Z" -> "2026-02-12 14:34:19Z": short, and the same on every machine.
const when = (ts) => (typeof ts === 'string' ? ts.replace('T', ' ').replace(/\.\d+/, '') : '');

function card(id) {
  let c = cards.get(id);
  if (c) {
    c.active = ++clock;
    return c;
  }
  const section = $('session-template').content.firstElementChild.cloneNode(true);
  section.dataset.session = id;
  const meter = new ContextMeter();
  meter.session = id;
  if (lang) meter.setAttribute('lang', lang);
  section.querySelector('.tools').append(meter);
  section.querySelector('h2').textContent = `session ${id || '(none)'}`;
  section.querySelector('.seat').textContent = id.length > 12 ? `${id.slice(0, 8)}…` : (id || 'session');
  const chart = new SessionChart();
  section.querySelector('.plot').prepend(chart.svg);
  c = { id, section, meter, chart, active: ++clock, figures: section.querySelector('.figures'),
    list: section.querySelector('.frames ol'), none: section.querySelector('.frames .none') };
  meter.addEventListener('change', () => figures(c));
  meter.addEventListener('warning', () => figures(c));
  cards.set(id, c);
  main.prepend(section);
  $('empty').hidden = true;
  while (cards.size > MAX_CARDS) drop(leastActive(id));
  figures(c);
  return c;
}

function leastActive(keep) {
  let old = null;
  for (const c of cards.values()) if (c.id !== keep && (!old || c.active < old.active)) old = c;
  return old;
}

function remove(c) {
  c.section.remove();
  cards.delete(c.id);
}

function drop(c) {
  remove(c);
  aside(setAside + 1);
}

// How many sessions the page does not show, said in the status line.
function aside(n) {
  setAside = n;
  $('set-aside').textContent = !n ? '' : `${nf.format(n)} older session${n === 1 ? '' : 's'} set aside `
    + `(the page keeps the ${MAX_CARDS} most recently active)`;
}

// The figures line: the meter's own state, in words, beside the ring.
function figures(c) {
  const s = c.meter.state;
  const parts = [];
  if (!s) parts.push('no reading yet');
  else {
    const used = s.projectedTokens ?? s.pressureTokens;
    parts.push(s.capacity == null
      ? `~${used == null ? '?' : nf.format(used)} tokens · capacity unknown (serve with -e capacity=N)`
      : `~${used == null ? '?' : nf.format(used)} of ${nf.format(s.capacity)} tokens`);
    if (s.pressureTokens != null) parts.push(`last provider reading ${nf.format(s.pressureTokens)}`);
    if (s.compactAtTokens != null) {
      parts.push(`auto-compacts at ~${nf.format(s.compactAtTokens)}${s.untilCompactTokens == null ? ''
        : ` (~${nf.format(s.untilCompactTokens)} to go)`}`);
    }
    if (s.seq != null) parts.push(`seq ${s.seq}`);
    if (s.timestamp) parts.push(when(s.timestamp));
    if (s.partial) parts.push('joined mid-session');
  }
  c.figures.replaceChildren(parts.join(' · '));
  if (c.meter.error != null) {
    const w = document.createElement('span');
    w.className = 'warn';
    w.textContent = ` · warning: ${c.meter.error}`;
    c.figures.append(w);
  }
}

// A record for a session: the meter applies it (or not: another session's, an older seq), and
// an applied pressure record is the chart's next point.
function record(r) {
  if (!r || typeof r.session !== 'string') return;
  const c = card(r.session);
  if (c.meter.update(r) && r.type === 'context/pressure') c.chart.add(c.meter.state);
}

function frame(id, f) {
  const c = card(id);
  const li = document.createElement('li');
  const t = document.createElement('time');
  t.textContent = when(f.timestamp) || 'unstamped';
  const delta = typeof f.estimated_tokens_delta === 'number' ? ` · ~${nf.format(f.estimated_tokens_delta)} tokens` : '';
  const from = f.folded_from ? ` · since ${when(f.folded_from)}` : '';
  li.append(t, ` ${f.folded_frames} × ${f.type || 'frame'} folded${delta}${from}`);
  c.list.prepend(li);
  while (c.list.children.length > FRAMES_SHOWN) c.list.lastElementChild.remove();
  c.none.hidden = true;
}

function status(s) {
  page.status = s;
  $('status').dataset.state = s.state;
  $('message').textContent = s.message;
  $('source').textContent = s.source;
  $('counts').textContent = `${nf.format(s.records)} read`;
  $('skipped').textContent = s.skipped
    ? `${nf.format(s.skipped)} skipped (last: ${s.lastSkipped})` : '';
  // The module's file name only (the whole path on hover): the line stays short.
  const module = $('module');
  module.textContent = s.module ? `folded by the ${s.module.replace(/ \/\S*\//, ' ')}` : '';
  module.title = s.module || '';
}

function clear() {
  for (const c of cards.values()) c.section.remove();
  cards.clear();
  aside(0);
  $('empty').hidden = false;
}

// Each session's latest state (newest first): a card for each of the first MAX_CARDS.
// A chart keeps its points when the snapshot goes on from them (a reconnect), else starts again.
function snapshot(s) {
  const shown = s.sessions.slice(0, MAX_CARDS);
  const keep = new Set(shown.map((x) => x.session));
  for (const c of [...cards.values()]) if (!keep.has(c.id)) remove(c);
  for (const x of [...shown].reverse()) {
    const c = card(x.session);
    const last = c.chart.points.at(-1);
    if (!x.pressure || (last && !(x.pressure.seq >= last.x))) c.chart.clear();
    c.meter.reset();
    c.list.replaceChildren();
    c.none.hidden = false;
    if (x.pressure && c.meter.update(x.pressure)) c.chart.add(c.meter.state);
    if (x.error) c.meter.update(x.error);
    for (const f of x.frames) frame(x.session, f);
    main.prepend(c.section);
  }
  $('empty').hidden = cards.size > 0;
  aside(s.sessions.length - shown.length);
  status(s.status);
}

const source = new EventSource('/events');
const on = (kind, apply) => source.addEventListener(kind, (e) => {
  page.events += 1;
  page.lastEventId = e.lastEventId;
  apply(JSON.parse(e.data));
});
on('snapshot', snapshot);
on('pressure', record);
on('frame', (d) => frame(d.session, d.frame));
on('status', status);
on('reset', () => clear());
// The server no longer keeps the session (its cap): neither does the page.
on('forget', (d) => {
  const c = cards.get(d.session);
  if (!c) return;
  remove(c);
  $('empty').hidden = cards.size > 0;
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
