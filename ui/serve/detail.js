// One session's detail, beside the board: what a card showed before the board (its
// <context-meter> in a mock composer, the figures line, the chart of the session so far, the
// latest folded frames), fed from the session's row and from the server's history of it.
// On open it fetches /api/sessions/{id} (the row and the whole history); on each later state of
// the session it fetches /api/sessions/{id}/history?after=SEQ, one request at a time.
import { ContextMeter } from '@agent-fold/context-meter';
import { SessionChart } from './chart.js';
import { ago, compactionText } from './board.js';

const FRAMES_SHOWN = 8;
const nf = new Intl.NumberFormat('en');
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const api = (id) => `/api/sessions/${encodeURIComponent(id)}`;
// "2026-02-12T14:34:19.464Z" -> "2026-02-12 14:34:19Z": short, and the same on every machine.
const when = (ts) => (typeof ts === 'string' ? ts.replace('T', ' ').replace(/\.\d+/, '') : '');

export class Detail {
  #id = null;
  #gen = 0; // bumped at each open, close and restart: a late answer for another is dropped
  #inflight = false;
  #pending = false;
  #loaded = false;
  #row = null;
  #folds = '';

  /** @param {HTMLElement} el the pane (#detail) @param {{lang?: string, now: () => number}} opts */
  constructor(el, { lang, now }) {
    this.el = el;
    this.now = now;
    const q = (s) => el.querySelector(s);
    this.parts = { id: q('.detail-id'), meta: q('.meta'), figures: q('.figures'), seat: q('.seat'),
      list: q('.frames ol'), none: q('.frames .none'), note: q('.note') };
    this.meter = new ContextMeter();
    if (lang) this.meter.setAttribute('lang', lang);
    q('.tools').append(this.meter);
    this.chart = new SessionChart();
    q('.plot').prepend(this.chart.svg);
    this.meter.addEventListener('change', () => this.#figures());
    this.meter.addEventListener('warning', () => this.#figures());
    setInterval(() => this.#meta(), 2000);
  }

  /** The open session, or null. */
  get id() { return this.#id; }

  /** Opens a session (with the row the board holds, when it has one) and fetches its history. */
  open(id, row) {
    if (this.#id === id) {
      if (row) this.update(row);
      return;
    }
    this.#id = id;
    this.el.hidden = false;
    this.parts.id.textContent = id;
    this.parts.seat.textContent = id.length > 12 ? `${id.slice(0, 8)}…` : id;
    this.meter.open = false;
    this.meter.reset();
    this.meter.session = id;
    this.#row = null;
    this.#folds = null;
    this.parts.note.hidden = true;
    this.parts.meta.replaceChildren();
    delete this.parts.meta.dataset.key;
    this.#frames([]);
    if (row) this.update(row);
    this.#figures();
    this.#restart();
  }

  close() {
    this.#id = null;
    this.#gen += 1;
    this.#inflight = false;
    this.#pending = false;
    this.meter.open = false;
    this.el.hidden = true;
  }

  /** A new state of the open session. A record older than the one shown means the source
   * started again (a reset): the meter and the chart start again from the server's history. */
  update(row) {
    if (!this.#id || !row || row.session !== this.#id) return;
    const rec = row.record && typeof row.record === 'object' ? row.record : null;
    const shown = this.meter.state;
    if (rec && shown && num(rec.seq) != null && shown.seq != null && rec.seq < shown.seq) {
      this.meter.reset();
      this.meter.session = this.#id;
      this.#row = null;
      this.#restart();
    }
    this.#apply(row);
  }

  // The meter takes what is not older than what it shows; the rest follows the newest row.
  #apply(row) {
    const rec = row.record && typeof row.record === 'object' ? row.record : null;
    if (rec) this.meter.record = rec;
    if (row.error && typeof row.error === 'object') this.meter.update(row.error);
    const seq = (r) => num(r?.seq) ?? num(r?.record?.seq) ?? -1;
    if (this.#row && seq(row) < seq(this.#row)) return;
    this.#row = row;
    this.#meta();
    this.#frames(row.folds);
    this.#figures();
  }

  /** Fetches what the history has after the last point drawn (at most one request at a time). */
  pull() {
    if (!this.#id) return;
    if (this.#inflight) {
      this.#pending = true;
      return;
    }
    const after = this.chart.lastSeq;
    if (!this.#loaded || after == null) {
      this.#load();
      return;
    }
    this.#fetch(`${api(this.#id)}/history?after=${after}`, (h) => this.chart.append(h?.points));
  }

  #restart() {
    this.#gen += 1;
    this.#inflight = false;
    this.#pending = false;
    this.#loaded = false;
    this.chart.clear();
    this.#load();
  }

  #load() {
    this.#fetch(api(this.#id), (d) => {
      // Fetched a moment ago: a state the stream has brought since is newer, and stays.
      if (d?.row && d.row.session === this.#id) this.#apply(d.row);
      this.chart.load(d?.history?.points);
      this.#loaded = true;
    });
  }

  async #fetch(url, apply) {
    const gen = this.#gen;
    this.#inflight = true;
    let again = false;
    try {
      const res = await fetch(url, { headers: { accept: 'application/json' } });
      if (gen !== this.#gen) return;
      if (res.status === 404) {
        this.parts.note.hidden = false;
        this.parts.note.textContent = 'The server no longer keeps this session.';
      } else if (res.ok) {
        apply(await res.json());
        if (gen !== this.#gen) return;
      }
    } catch {
      // The connection's loss shows in the status line; the next state of the session asks again.
    } finally {
      if (gen === this.#gen) {
        this.#inflight = false;
        again = this.#pending;
        this.#pending = false;
      }
    }
    if (again) this.pull();
  }

  // agent · model · live or idle · last activity, and the alert rules firing.
  #meta() {
    const row = this.#row;
    if (!this.#id || !row) return;
    const active = num(row.active);
    const parts = [typeof row.agent === 'string' ? row.agent : 'agent unknown',
      typeof row.model === 'string' ? row.model : 'model unknown',
      row.live === false ? 'idle' : 'live',
      `last activity ${ago(active == null ? null : this.now() - active)}`];
    const alerts = Array.isArray(row.alerts) ? row.alerts.filter((a) => typeof a === 'string') : [];
    const text = parts.join(' · ');
    const key = `${text}|${alerts.join('\n')}`;
    if (this.parts.meta.dataset.key === key) return;
    this.parts.meta.dataset.key = key;
    this.parts.meta.replaceChildren(text);
    for (const a of alerts) {
      const b = document.createElement('span');
      b.className = 'alert';
      b.textContent = a;
      this.parts.meta.append(' ', b);
    }
  }

  // The figures line: the meter's own state, in words, beside the ring.
  #figures() {
    const s = this.meter.state;
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
      // The count and the last compaction are the row's (the meter draws no such figure).
      const rec = this.#row?.record;
      const compactions = num(rec?.compactions);
      if (compactions != null) {
        const last = compactionText(rec);
        parts.push(compactions === 0 ? 'not compacted yet'
          : `compacted ${nf.format(compactions)}×${last ? ` (${last})` : ''}`);
      }
      if (s.seq != null) parts.push(`seq ${s.seq}`);
      if (s.timestamp) parts.push(when(s.timestamp));
      if (s.partial) parts.push('joined mid-session');
    }
    const f = this.parts.figures;
    f.replaceChildren(parts.join(' · '));
    if (this.meter.error != null) {
      const w = document.createElement('span');
      w.className = 'warn';
      w.textContent = ` · warning: ${this.meter.error}`;
      f.append(w);
    }
  }

  // The latest folded frames, newest first (the row has them newest last).
  #frames(folds) {
    const list = Array.isArray(folds) ? folds.filter((f) => f && typeof f === 'object').slice(-FRAMES_SHOWN) : [];
    const key = JSON.stringify(list);
    if (key === this.#folds) return;
    this.#folds = key;
    this.parts.list.replaceChildren(...list.reverse().map((f) => {
      const li = document.createElement('li');
      const t = document.createElement('time');
      t.textContent = when(f.timestamp) || 'unstamped';
      const delta = typeof f.estimated_tokens_delta === 'number' ? ` · ~${nf.format(f.estimated_tokens_delta)} tokens` : '';
      const from = f.folded_from ? ` · since ${when(f.folded_from)}` : '';
      li.append(t, ` ${num(f.folded_frames) ?? '?'} × ${typeof f.type === 'string' && f.type ? f.type : 'frame'} folded${delta}${from}`);
      return li;
    }));
    this.parts.none.hidden = list.length > 0;
  }
}
