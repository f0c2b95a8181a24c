/* <context-meter>: one agent session's context occupancy, drawn from agent-fold's pressure
 * records (SPEC §3; design: seed 002). A classic script with no imports and no build step, so
 * it loads by <script src> from http:// and file:// alike. It knows nothing of transport: the
 * page parses each record however it arrives (SSE, fetch, a file) and calls meter.update(record).
 *
 *   <context-meter session="s-42" lang="zh-CN"></context-meter>
 *   meter.update({type: "context/pressure", session: "s-42", contextOccupancy: 0.04, ...});
 *
 * Attributes: session (records of other sessions are ignored; unset, the meter keeps to the
 * first record's session), lang (else the nearest ancestor lang, else navigator.language), open
 * (panel shown; reflected). Set by the meter, for page CSS: warning.
 * Properties: update(record) -> boolean applied, reset(), open, state, error, ignored.
 * Event: "toggle" (not bubbling) whenever the panel opens or closes; read meter.open.
 * Parts: ring, panel, bar. */
(() => {
  'use strict';
  // Loaded twice (two script tags): the first definition stands; define() would throw.
  if (!window.customElements || customElements.get('context-meter')) return;

  // Every string, one table keyed by locale. context.aria is both the ring's accessible name and
  // the panel header, split at {percent} so each language places the figure itself.
  const STRINGS = {
    en: {
      'context.aria': '{percent} of context used',
      'context.ariaUnknown': 'Context use unknown',
      'context.ariaWarning': '{status}. Warning: the context figures could not be updated',
      'context.capacityUnknown': 'capacity unknown',
      'context.unknown': 'unknown',
      'context.system': 'System prompt',
      'context.tools': 'Tools',
      'context.messages': 'Messages',
      'context.partial': 'Joined mid-session: figures cover only what was seen.',
      'context.estimate': '~ estimated at about 4 characters per token.',
      'context.noReading': 'No reading yet',
      'context.warning': 'Warning',
    },
    'zh-CN': {
      'context.aria': '上下文已使用 {percent}',
      'context.ariaUnknown': '上下文占用未知',
      'context.ariaWarning': '{status}。警告：上下文数据未能更新',
      'context.capacityUnknown': '容量未知',
      'context.unknown': '未知',
      'context.system': '系统提示词',
      'context.tools': '工具',
      'context.messages': '对话',
      'context.partial': '会话中途接入：数字仅涵盖已看到的部分。',
      'context.estimate': '~ 按约 4 字符 ≈ 1 token 估算。',
      'context.noReading': '尚无读数',
      'context.warning': '警告',
    },
  };

  const CATEGORIES = ['system', 'tools', 'messages'];
  const KEYS = { system: 'systemTokens', tools: 'toolsTokens', messages: 'messageTokens' };
  // Messages purple is a literal on purpose: the design platform has no purple token (seed 002).
  const COLOURS = { system: '#0ea5e9', tools: '#f59e0b', messages: '#8b5cf6', unknown: '#9ca3af' };
  const FIGURES = ['pressureTokens', 'projectedTokens', 'capacity', 'contextOccupancy',
    'systemTokens', 'toolsTokens', 'messageTokens'];

  // A figure is a finite number or null: absent, null or garbage never reads as 0.
  const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

  // en-GB -> en, zh / zh-TW -> zh-CN (the one Chinese table), anything else -> en.
  function pickLocale(tag) {
    const lower = String(tag || '').toLowerCase();
    const keys = Object.keys(STRINGS);
    return keys.find((k) => k.toLowerCase() === lower)
      || keys.find((k) => k.split('-')[0].toLowerCase() === lower.split('-')[0])
      || 'en';
  }

  const TEMPLATE = `
<style>
  :host { position: relative; display: inline-flex; vertical-align: middle; line-height: 1; }
  :host([hidden]) { display: none; }
  .ring { display: inline-flex; width: 14px; height: 14px; border-radius: 50%; cursor: pointer;
    color: var(--context-meter-ring, #2563eb); }
  .ring:focus { outline: none; }
  .ring:focus-visible { outline: 2px solid var(--context-meter-focus, #2563eb); outline-offset: 2px; }
  svg { display: block; overflow: visible; }
  circle { fill: none; stroke-width: 2.5; }
  .track { stroke: currentColor; opacity: 0.22; }
  .arc { stroke: currentColor; stroke-linecap: butt; }
  .ring.warning { color: var(--context-meter-warning, #dc2626); }
  .ring.warning .track { opacity: 0.45; }
  .panel { position: absolute; bottom: calc(100% + 8px); inset-inline-end: 0; z-index: 10;
    box-sizing: border-box; width: 16rem; padding: 10px 12px; border-radius: 8px;
    background: var(--context-meter-panel-bg, Canvas); color: var(--context-meter-panel-fg, CanvasText);
    border: 1px solid rgba(127, 127, 127, 0.35); box-shadow: 0 4px 16px rgba(0, 0, 0, 0.16);
    font: 13px/1.4 system-ui, sans-serif; text-align: start; cursor: auto; }
  .panel[hidden] { display: none; }
  p { margin: 0; }
  .head { font-weight: 400; }
  .figure { font-weight: 650; font-variant-numeric: tabular-nums; }
  .used { margin-top: 2px; opacity: 0.75; font-variant-numeric: tabular-nums; }
  .bar { display: flex; height: 4px; margin: 8px 0; border-radius: 2px; overflow: hidden;
    background: rgba(127, 127, 127, 0.2); }
  .segment { height: 100%; flex: none; }
  dl { display: grid; grid-template-columns: 1fr auto; gap: 3px 12px; margin: 0; }
  .row { display: contents; }
  .swatch { display: inline-block; width: 8px; height: 8px; margin-inline-end: 6px; border-radius: 2px; }
  dt, dd { margin: 0; }
  dd { text-align: end; font-variant-numeric: tabular-nums; }
  dd.unknown { font-style: italic; opacity: 0.7; }
  .note { margin-top: 8px; font-size: 11px; opacity: 0.65; }
  .error { margin-top: 8px; padding: 6px 8px; border-radius: 4px; font-size: 12px;
    color: var(--context-meter-warning, #dc2626); background: rgba(220, 38, 38, 0.08);
    overflow-wrap: anywhere; }
  .error[hidden], .figure[hidden] { display: none; }
</style>
<span class="ring" part="ring" role="button" tabindex="0" aria-expanded="false" aria-controls="panel">
  <svg viewBox="0 0 14 14" width="14" height="14" aria-hidden="true" focusable="false">
    <circle class="track" cx="7" cy="7" r="5.5"/>
    <circle class="arc" cx="7" cy="7" r="5.5" pathLength="100" stroke-dasharray="0 100"
      transform="rotate(-90 7 7)"/>
  </svg>
</span>
<div class="panel" part="panel" id="panel" role="group" aria-labelledby="head" hidden>
  <p class="head" id="head" aria-live="polite"><span class="before"></span><strong class="figure"></strong><span class="after"></span></p>
  <p class="used" aria-live="polite"></p>
  <div class="bar" part="bar" aria-hidden="true"></div>
  <dl></dl>
  <p class="error" hidden><strong class="warning-label"></strong> <span class="error-text"></span></p>
  <p class="note partial" hidden></p>
  <p class="note estimate"></p>
</div>`;

  class ContextMeter extends HTMLElement {
    static get observedAttributes() { return ['session', 'lang', 'open']; }

    #state = null; // the last good figures (a context/pressure record's), or null
    #error = null; // the warning text of a context/error since then, or null
    #seq = null; // the highest seq applied: an older record is a stale re-delivery
    #bound = null; // without a session attribute, the first record's session, boxed
    #ignored = 0;
    #els;

    constructor() {
      super();
      const root = this.attachShadow({ mode: 'open' });
      root.innerHTML = TEMPLATE;
      const $ = (s) => root.querySelector(s);
      this.#els = {
        ring: $('.ring'), arc: $('.arc'), panel: $('.panel'), before: $('.before'),
        figure: $('.figure'), after: $('.after'), used: $('.used'), bar: $('.bar'), rows: $('dl'),
        error: $('.error'), warningLabel: $('.warning-label'), errorText: $('.error-text'),
        partial: $('.partial'), estimate: $('.estimate'),
      };
      const { ring } = this.#els;
      ring.addEventListener('click', () => { this.open = !this.open; });
      ring.addEventListener('keydown', (e) => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault(); // Space would scroll the page
          this.open = !this.open;
        }
      });
      // Escape from the ring or anywhere in the panel closes it and gives focus back to the ring.
      root.addEventListener('keydown', (e) => {
        if (e.key !== 'Escape' || !this.open) return;
        e.stopPropagation(); // the composer around us must not also act on this Escape
        this.open = false;
        ring.focus();
      });
      this.#onOutside = (e) => { if (this.open && !e.composedPath().includes(this)) this.open = false; };
    }

    #onOutside;

    connectedCallback() {
      document.addEventListener('pointerdown', this.#onOutside, true);
      this.#render();
    }

    disconnectedCallback() { document.removeEventListener('pointerdown', this.#onOutside, true); }

    attributeChangedCallback(name, old, value) {
      if (old === value) return;
      if (name === 'session') this.reset(); // figures of another session must not linger
      else if (name === 'open') this.#syncOpen();
      else this.#render();
    }

    get open() { return this.hasAttribute('open'); }
    set open(v) { this.toggleAttribute('open', Boolean(v)); }
    get ignored() { return this.#ignored; }
    get error() { return this.#error; }
    get state() { return this.#state && { ...this.#state }; }

    /** Feed one parsed record; returns whether it was applied (else it is counted in ignored). */
    update(record) {
      const ignore = () => { this.#ignored += 1; return false; };
      if (!record || typeof record !== 'object') return ignore();
      const { type } = record;
      if (type !== 'context/pressure' && type !== 'context/error') return ignore();
      const session = this.getAttribute('session') ?? (this.#bound && this.#bound.id);
      if (session != null && record.session !== session) return ignore();
      const seq = num(record.seq);
      // Records of a session come in seq order; an older one is a replay and would turn back time.
      if (seq != null && this.#seq != null && seq < this.#seq) return ignore();
      if (!this.hasAttribute('session') && !this.#bound) this.#bound = { id: record.session };
      if (seq != null) this.#seq = seq;
      if (type === 'context/error') {
        // The last good figures stay on display; only the warning is new.
        this.#error = typeof record.error === 'string' && record.error ? record.error : 'context/error';
      } else {
        const s = { session: record.session, seq, partial: record.partial === true,
          timestamp: typeof record.timestamp === 'string' ? record.timestamp : null };
        for (const k of FIGURES) s[k] = num(record[k]);
        this.#state = s;
        this.#error = null;
      }
      this.#render();
      return true;
    }

    /** Forget figures, warning, seq and the session bound to; keeps the ignored count. */
    reset() {
      this.#state = null;
      this.#error = null;
      this.#seq = null;
      this.#bound = null;
      this.#render();
    }

    #syncOpen() {
      const { ring, panel } = this.#els;
      const open = this.open;
      if (panel.hidden !== open) return; // already in that state
      panel.hidden = !open;
      ring.setAttribute('aria-expanded', String(open));
      this.dispatchEvent(new Event('toggle'));
    }

    #locale() {
      const el = this.closest('[lang]');
      return pickLocale((el && el.getAttribute('lang')) || navigator.language);
    }

    #render() {
      const locale = this.#locale();
      const t = (key) => STRINGS[locale][key] ?? STRINGS.en[key];
      const nf = new Intl.NumberFormat(locale, { maximumFractionDigits: 0 });
      const fmt = (n) => nf.format(n);
      const e = this.#els;
      const s = this.#state;
      const occ = s ? s.contextOccupancy : null;
      // The drawing is clamped to [0, 1]; the text keeps the record's figure (over 100% is news).
      const fill = occ == null ? 0 : Math.min(1, Math.max(0, occ));
      const percent = occ == null ? null
        : new Intl.NumberFormat(locale, { style: 'percent', maximumFractionDigits: 0 }).format(occ);
      e.ring.lang = locale;
      e.panel.lang = locale;

      // Ring: pathLength 100, so the dash is the percent; butt caps draw nothing at 0. Full is a
      // gapless pattern: a 100-long dash leaves a hairline at the top (the length is approximate).
      const dash = +(fill * 100).toFixed(3);
      e.arc.setAttribute('stroke-dasharray', dash >= 100 ? '100 0' : `${dash} 100`);
      const status = percent == null ? t('context.ariaUnknown') : t('context.aria').replace('{percent}', percent);
      e.ring.classList.toggle('warning', this.#error != null);
      this.toggleAttribute('warning', this.#error != null);
      e.ring.setAttribute('aria-label', this.#error == null ? status
        : t('context.ariaWarning').replace('{status}', status));

      // Header: the one sentence split at its slot, so the figure sits where the language puts it.
      if (percent == null) {
        e.before.textContent = t('context.ariaUnknown');
        e.figure.textContent = '';
        e.after.textContent = '';
      } else {
        const [before, after = ''] = t('context.aria').split('{percent}');
        e.before.textContent = before;
        e.figure.textContent = percent;
        e.after.textContent = after;
      }
      e.figure.hidden = percent == null;

      // ~used / capacity: used is the projection, else the bare provider sample.
      const used = s && (s.projectedTokens ?? s.pressureTokens);
      const capacity = s && s.capacity;
      e.used.textContent = !s ? t('context.noReading')
        : `${used == null ? t('context.unknown') : `~${fmt(used)}`} / ${capacity == null ? t('context.capacityUnknown') : fmt(capacity)}`;

      // Bar: total length = occupancy; heuristic shares split it. Zero-width segments are not
      // rendered at all (a min-width would paint a sliver at 0%).
      const segments = [];
      if (fill > 0) {
        const figures = CATEGORIES.map((c) => s[KEYS[c]]);
        const sum = figures.reduce((a, v) => a + (v ?? 0), 0);
        if (figures.some((v) => v == null) || sum <= 0) {
          // A null share (partial session) or nothing to split by: one neutral segment for the whole occupancy, no invented split.
          segments.push(['unknown', fill * 100]);
        } else {
          CATEGORIES.forEach((c, i) => segments.push([c, (fill * 100 * figures[i]) / sum]));
        }
      }
      e.bar.replaceChildren(...segments
        .map(([c, w]) => [c, +w.toFixed(4)])
        .filter(([, w]) => w > 0)
        .map(([c, w]) => {
          const seg = document.createElement('span');
          seg.className = `segment ${c}`;
          seg.dataset.category = c;
          seg.style.width = `${w}%`;
          seg.style.background = COLOURS[c];
          return seg;
        }));

      // Rows: the raw heuristic figures, never scaled to the provider's; null is unknown, not 0.
      e.rows.replaceChildren(...CATEGORIES.map((c) => {
        const v = s ? s[KEYS[c]] : null;
        const row = document.createElement('div');
        row.className = `row ${c}`;
        const swatch = document.createElement('span');
        swatch.className = 'swatch';
        swatch.style.background = COLOURS[c];
        swatch.setAttribute('aria-hidden', 'true');
        const dt = document.createElement('dt');
        dt.append(swatch, t(`context.${c}`));
        const dd = document.createElement('dd');
        dd.textContent = v == null ? t('context.unknown') : `~${fmt(v)}`;
        dd.classList.toggle('unknown', v == null);
        row.append(dt, dd);
        return row;
      }));

      e.error.hidden = this.#error == null;
      e.warningLabel.textContent = t('context.warning');
      e.errorText.textContent = this.#error ?? '';
      e.partial.hidden = !(s && s.partial);
      e.partial.textContent = t('context.partial');
      e.estimate.textContent = t('context.estimate');
    }
  }

  customElements.define('context-meter', ContextMeter);
})();
