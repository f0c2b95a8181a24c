//! The page and the element's script, both inside the binary (include_str!), so that
//! `agent-fold serve` needs no files beside it.

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// `ui/context-meter.js` as it is in the repository.
pub const SCRIPT: &str = include_str!("../../ui/context-meter.js");

/// `GET /`.
pub async fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        PAGE,
    )
        .into_response()
}

/// `GET /context-meter.js`.
pub async fn script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        SCRIPT,
    )
        .into_response()
}

/// One section per session, newest first: a mock composer with the session's meter (its panel
/// opens upwards, hence a card tall enough for it below the figures), a line of figures, and
/// the latest folded frames.
/// The meters take the browser's language (no `lang` on `<html>`) unless `?lang=` names one; the
/// page's own words are English.
pub const PAGE: &str = r#"<!doctype html>
<html>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>agent-fold · live context</title>
<style>
  body { margin: 0; font: 14px/1.5 system-ui, sans-serif; color: #1f2937; background: #f3f4f6; }
  header { position: sticky; top: 0; z-index: 20; padding: 12px 24px; background: #fff;
    border-bottom: 1px solid #e5e7eb; }
  h1 { margin: 0; font-size: 16px; }
  h1 small { font-weight: 400; color: #6b7280; }
  .status { display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 12px; margin: 4px 0 0;
    font-size: 13px; color: #4b5563; }
  .dot { display: inline-block; width: 8px; height: 8px; margin-inline-end: 6px; border-radius: 50%;
    background: #9ca3af; }
  .status[data-state="live"] .dot { background: #16a34a; }
  .status[data-state="starting"] .dot { background: #f59e0b; }
  .status[data-state="error"] .dot { background: #dc2626; }
  .status[data-state="error"] .message { color: #b91c1c; font-weight: 600; }
  .counts, .module { color: #6b7280; }
  .skipped { color: #b45309; }
  main { padding: 16px 24px 32px; display: grid; gap: 16px; }
  .empty-page { color: #6b7280; }
  .session { display: grid; grid-template-columns: minmax(300px, 1fr) minmax(260px, 1fr); gap: 16px;
    padding: 12px; border-radius: 10px; background: #fff; box-shadow: 0 1px 3px rgba(0, 0, 0, 0.08); }
  .card { display: flex; flex-direction: column; min-height: 340px; }
  .card h2 { margin: 0; font-size: 13px; font-weight: 600; color: #374151; overflow-wrap: anywhere; }
  .figures { margin: 2px 0 auto; font-size: 12px; color: #6b7280; font-variant-numeric: tabular-nums; }
  .figures .warn { color: #b91c1c; }
  .composer { margin-top: 12px; border: 1px solid #d1d5db; border-radius: 10px; padding: 8px; }
  .composer .input { min-height: 28px; color: #9ca3af; }
  .composer .tools { display: flex; align-items: center; justify-content: flex-end; gap: 8px;
    font-size: 12px; color: #4b5563; }
  .seat { padding: 2px 8px; border-radius: 6px; background: #f3f4f6; }
  .frames h3 { margin: 0 0 4px; font-size: 13px; font-weight: 600; color: #374151; }
  .frames ol { margin: 0; padding: 0; list-style: none; font-size: 12px; font-variant-numeric: tabular-nums; }
  .frames li { padding: 4px 0; border-top: 1px solid #f3f4f6; }
  .frames li:first-child { border-top: 0; }
  .frames time { color: #6b7280; }
  .frames .none { margin: 0; font-size: 12px; color: #9ca3af; }
</style>
</head>
<body>
<header lang="en">
  <h1>agent-fold <small>· live context</small></h1>
  <p class="status" id="status" data-state="starting" role="status">
    <span><span class="dot"></span><span class="message" id="message">connecting…</span></span>
    <span class="source" id="source"></span>
    <span class="counts" id="counts"></span>
    <span class="skipped" id="skipped"></span>
    <span class="module" id="module"></span>
  </p>
</header>
<main id="sessions"><p class="empty-page" id="empty" lang="en">No session yet: its records will show here as they come.</p></main>
<template id="session-template">
  <section class="session">
    <div class="card">
      <h2 lang="en"></h2>
      <p class="figures" lang="en"></p>
      <div class="composer"><div class="input" lang="en">Message the agent…</div>
        <div class="tools"><span class="seat"></span><context-meter></context-meter></div></div>
    </div>
    <div class="frames" lang="en">
      <h3>Folded frames</h3>
      <ol></ol>
      <p class="none">None yet: a run of two or more thinking counters shows here as one.</p>
    </div>
  </section>
</template>
<script src="/context-meter.js"></script>
<script>
'use strict';
(() => {
  const lang = new URLSearchParams(location.search).get('lang');
  const nf = new Intl.NumberFormat('en');
  const $ = (id) => document.getElementById(id);
  const main = $('sessions');
  const cards = new Map(); // session id -> its section's parts
  // What tests and curious people can read: events seen, the last id, connection state.
  const page = window.agentFold = { events: 0, lastEventId: '', connected: false, status: null };

  // "2026-02-12T14:34:19.464Z" -> "2026-02-12 14:34:19Z": short, and the same on every machine.
  const when = (ts) => (typeof ts === 'string' ? ts.replace('T', ' ').replace(/\.\d+/, '') : '');

  function card(id) {
    let c = cards.get(id);
    if (c) return c;
    const section = $('session-template').content.firstElementChild.cloneNode(true);
    section.dataset.session = id;
    const meter = section.querySelector('context-meter');
    meter.setAttribute('session', id);
    if (lang) meter.setAttribute('lang', lang);
    section.querySelector('h2').textContent = `session ${id || '(none)'}`;
    section.querySelector('.seat').textContent = id.length > 12 ? `${id.slice(0, 8)}…` : (id || 'session');
    c = { id, section, meter, figures: section.querySelector('.figures'),
      list: section.querySelector('.frames ol'), none: section.querySelector('.frames .none') };
    cards.set(id, c);
    main.prepend(section);
    $('empty').hidden = true;
    figures(c);
    return c;
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

  function pressure(r) {
    if (!r || typeof r.session !== 'string') return;
    const c = card(r.session);
    c.meter.update(r);
    figures(c);
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
    while (c.list.children.length > 8) c.list.lastElementChild.remove();
    c.none.hidden = true;
  }

  function status(s) {
    page.status = s;
    const el = $('status');
    el.dataset.state = s.state;
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
    $('empty').hidden = false;
  }

  function snapshot(s) {
    const keep = new Set(s.sessions.map((x) => x.session));
    for (const [id, c] of cards) if (!keep.has(id)) { c.section.remove(); cards.delete(id); }
    // Oldest first, each to the top: the newest ends first.
    for (const x of [...s.sessions].reverse()) {
      const c = card(x.session);
      c.meter.reset();
      c.list.replaceChildren();
      c.none.hidden = false;
      if (x.pressure) c.meter.update(x.pressure);
      if (x.error) c.meter.update(x.error);
      for (const f of x.frames) frame(x.session, f);
      figures(c);
      main.prepend(c.section);
    }
    $('empty').hidden = cards.size > 0;
    status(s.status);
  }

  const source = new EventSource('/events');
  const on = (kind, apply) => source.addEventListener(kind, (e) => {
    page.events += 1;
    page.lastEventId = e.lastEventId;
    apply(JSON.parse(e.data));
  });
  on('snapshot', snapshot);
  on('pressure', pressure);
  on('frame', (d) => frame(d.session, d.frame));
  on('status', status);
  on('reset', () => clear());
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
})();
</script>
</body>
</html>
"#;
