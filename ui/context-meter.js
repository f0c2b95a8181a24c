/* <context-meter>: one agent session's context occupancy, drawn from agent-fold's pressure
 * records (docs/context-meter.md). An ES module with no imports: where there is a DOM, loading
 * it defines the element; where there is none (Node, a server render) it only exports the class.
 * context-meter.classic.js is this file as a classic script, made by build-classic.mjs.
 *
 *   <context-meter session="s-42" lang="zh-CN"></context-meter>
 *   meter.record = {type: "context/pressure", session: "s-42", contextOccupancy: 0.04, ...};
 *
 * Attributes: session, lang, open (reflected). Set by the meter, for page CSS: warning.
 * Properties: record, session, open, state, error, ignored; update(record) -> applied, reset().
 * Static: ContextMeter.addLocale(tag, strings), ContextMeter.locales, announceInterval.
 * Events (CustomEvent, not bubbling): change {state}, warning {error}, openchange {open}.
 * Parts: ring, ring-tick, panel, bar, bar-tick. CSS custom properties: --context-meter-*. */

// Every string, one table per locale. context.aria is both the ring's accessible name and the
// panel header, split at {percent} so that each language places the figure itself.
const EN = {
  'context.aria': '{percent} of context used',
  'context.ariaUnknown': 'Context use unknown',
  'context.ariaWarning': '{status}. Warning: the context figures could not be updated',
  'context.capacityUnknown': 'capacity unknown',
  'context.unknown': 'unknown',
  'context.notInLog': 'not in this log',
  'context.system': 'System prompt',
  'context.tools': 'Tools',
  'context.messages': 'Messages',
  'context.compactAt': 'Auto-compacts at ~{at} · ~{left} to go',
  'context.compactDue': 'Auto-compacts at ~{at} · due now',
  'context.compactAtOnly': 'Auto-compacts at ~{at}',
  'context.partial': 'Joined mid-session: figures cover only what was seen.',
  'context.estimate': '~ estimated at about 4 characters per token.',
  'context.noReading': 'No reading yet',
  'context.warning': 'Warning',
};

const STRINGS = new Map([
  ['en', EN],
  ['zh-CN', {
    'context.aria': '上下文已使用 {percent}',
    'context.ariaUnknown': '上下文占用未知',
    'context.ariaWarning': '{status}。警告：上下文数据未能更新',
    'context.capacityUnknown': '容量未知',
    'context.unknown': '未知',
    'context.notInLog': '日志中没有',
    'context.system': '系统提示词',
    'context.tools': '工具',
    'context.messages': '对话',
    'context.compactAt': '约 {at} 时自动压缩 · 还剩约 {left}',
    'context.compactDue': '约 {at} 时自动压缩 · 即将压缩',
    'context.compactAtOnly': '约 {at} 时自动压缩',
    'context.partial': '会话中途接入：数字仅涵盖已看到的部分。',
    'context.estimate': '~ 按约 4 字符 ≈ 1 token 估算。',
    'context.noReading': '尚无读数',
    'context.warning': '警告',
  }],
  ['zh-TW', {
    'context.aria': '上下文已使用 {percent}',
    'context.ariaUnknown': '上下文佔用未知',
    'context.ariaWarning': '{status}。警告：上下文資料未能更新',
    'context.capacityUnknown': '容量未知',
    'context.unknown': '未知',
    'context.notInLog': '日誌中沒有',
    'context.system': '系統提示詞',
    'context.tools': '工具',
    'context.messages': '對話',
    'context.compactAt': '約 {at} 時自動壓縮 · 還剩約 {left}',
    'context.compactDue': '約 {at} 時自動壓縮 · 即將壓縮',
    'context.compactAtOnly': '約 {at} 時自動壓縮',
    'context.partial': '工作階段中途加入：數字僅涵蓋已看到的部分。',
    'context.estimate': '~ 以約 4 個字元 ≈ 1 個 token 估算。',
    'context.noReading': '尚無讀數',
    'context.warning': '警告',
  }],
]);

// The placeholders a string must keep, whatever the language.
const SLOTS = {
  'context.aria': ['{percent}'],
  'context.ariaWarning': ['{status}'],
  'context.compactAt': ['{at}', '{left}'],
  'context.compactDue': ['{at}'],
  'context.compactAtOnly': ['{at}'],
};

const CATEGORIES = ['system', 'tools', 'messages'];
const KEYS = { system: 'systemTokens', tools: 'toolsTokens', messages: 'messageTokens' };
const FIGURES = ['pressureTokens', 'projectedTokens', 'capacity', 'contextOccupancy',
  'systemTokens', 'toolsTokens', 'messageTokens', 'estimateScale', 'compactAtTokens',
  'untilCompactTokens'];
const STATE_KEYS = ['session', 'seq', 'timestamp', 'partial', 'systemNotInLog', 'toolsNotInLog',
  ...FIGURES];

// A figure is a finite number or null: absent, null or garbage never reads as 0.
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const sameState = (a, b) => a === b || (a != null && b != null && STATE_KEYS.every((k) => a[k] === b[k]));
const clamp = (v, lo, hi) => Math.max(lo, Math.min(v, hi));
const setText = (el, text) => { if (el.textContent !== text) el.textContent = text; };
const fill = (text, slots) => Object.entries(slots).reduce((s, [k, v]) => s.replace(`{${k}}`, v), text);

// Language, script and region of a tag, its likely subtags added (zh-HK -> zh Hant HK).
function subtags(tag) {
  try {
    const l = new Intl.Locale(tag).maximize();
    return [l.language, l.script, l.region];
  } catch {
    return null;
  }
}

// The table for a tag: the same tag, else the same language, script and region, else the same
// language and script (zh-HK reads zh-TW), else the same language, else en.
function resolveLocale(tag) {
  const lower = tag.toLowerCase();
  const keys = [...STRINGS.keys()];
  const exact = keys.find((k) => k.toLowerCase() === lower);
  const want = subtags(tag);
  if (exact || !want) return exact || 'en';
  const have = keys.map((k) => [k, subtags(k)]).filter(([, s]) => s);
  const match = (n) => have.find(([, s]) => s.slice(0, n).every((v, i) => v === want[i]));
  return (match(3) || match(2) || match(1) || ['en'])[0];
}

// Resolved tags, bounded: lang attributes can be anything a page writes.
const picked = new Map();
function pickLocale(tag) {
  const key = String(tag || '');
  let hit = picked.get(key);
  if (!hit) {
    hit = resolveLocale(key);
    if (picked.size >= 64) picked.clear();
    picked.set(key, hit);
  }
  return hit;
}

// Number formats, made once per locale table (never per update).
const formats = new Map();
function formatsFor(locale) {
  let f = formats.get(locale);
  if (!f) {
    f = {
      integer: new Intl.NumberFormat(locale, { maximumFractionDigits: 0 }),
      percent: new Intl.NumberFormat(locale, { style: 'percent', maximumFractionDigits: 0 }),
      compact: new Intl.NumberFormat(locale, { notation: 'compact', maximumSignificantDigits: 3 }),
    };
    formats.set(locale, f);
  }
  return f;
}

const describe = (v) => (typeof v === 'string' ? JSON.stringify(v) : String(v));

const TEMPLATE = `
<style>
  :host { position: relative; display: inline-flex; vertical-align: middle; line-height: 1; }
  :host([hidden]) { display: none; }
  [hidden] { display: none !important; }
  .ring { box-sizing: border-box; display: inline-flex; flex: none; margin: 0; padding: 0; border: 0;
    border-radius: 50%; background: none; font: inherit; cursor: pointer;
    width: var(--context-meter-ring-size, 14px); height: var(--context-meter-ring-size, 14px);
    color: var(--context-meter-ring, #2563eb); }
  .ring:focus { outline: none; }
  .ring:focus-visible { outline: 2px solid var(--context-meter-focus, #2563eb); outline-offset: 2px; }
  .ring svg { display: block; width: 100%; height: 100%; overflow: visible; }
  circle { fill: none; stroke-width: 2.5; }
  .track { stroke: currentColor; opacity: 0.22; }
  .arc { stroke: currentColor; stroke-linecap: butt; }
  .ring-tick { stroke: var(--context-meter-tick, CanvasText); stroke-width: 1.25; }
  .ring.warning { color: var(--context-meter-warning, #dc2626); }
  .ring.warning .track { opacity: 0.45; }
  .panel { position: fixed; inset: auto; top: 0; left: 0; margin: 0; z-index: 10;
    box-sizing: border-box; width: var(--context-meter-panel-width, 16rem);
    max-width: calc(100vw - 16px); max-height: calc(100vh - 16px); overflow: auto;
    padding: 10px 12px; border-radius: 8px;
    background: var(--context-meter-panel-bg, Canvas); color: var(--context-meter-panel-fg, CanvasText);
    border: 1px solid var(--context-meter-panel-border, rgba(127, 127, 127, 0.35));
    box-shadow: 0 4px 16px rgba(0, 0, 0, 0.16);
    font: var(--context-meter-font, 13px/1.4 system-ui, sans-serif); text-align: start; cursor: auto; }
  p { margin: 0; }
  .head { font-weight: 400; }
  .figure { font-weight: 650; font-variant-numeric: tabular-nums; }
  .used, .compact { margin-top: 2px; opacity: 0.75; font-variant-numeric: tabular-nums; }
  .scale { position: relative; margin: 8px 0; }
  .bar { display: flex; height: var(--context-meter-bar-height, 4px); border-radius: 2px;
    overflow: hidden; background: rgba(127, 127, 127, 0.2); }
  .segment { height: 100%; flex: none; }
  .system { --swatch: var(--context-meter-system, #0ea5e9); }
  .tools { --swatch: var(--context-meter-tools, #f59e0b); }
  .messages { --swatch: var(--context-meter-messages, #8b5cf6); }
  .unknown { --swatch: var(--context-meter-unknown, #9ca3af); }
  .segment, .swatch { background: var(--swatch); }
  .bar-tick { position: absolute; top: -3px; bottom: -3px; width: 2px; margin-inline-start: -1px;
    border-radius: 1px; background: var(--context-meter-tick, CanvasText); }
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
  .live { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%);
    white-space: nowrap; }
  /* Forced colours replace every author colour: the drawing keeps to system colours instead. */
  @media (forced-colors: active) {
    .ring, .scale, .swatch { forced-color-adjust: none; }
    .ring { color: ButtonText; }
    .ring.warning { color: Highlight; }
    .ring-tick { stroke: Highlight; }
    .bar { background: Canvas; outline: 1px solid CanvasText; }
    .segment, .swatch { background: CanvasText; }
    .segment.unknown, .swatch.unknown { background: GrayText; }
    .segment + .segment { border-inline-start: 1px solid Canvas; box-sizing: border-box; }
    .bar-tick { background: Highlight; }
  }
</style>
<button type="button" class="ring" part="ring" aria-expanded="false" aria-controls="panel">
  <svg viewBox="0 0 14 14" aria-hidden="true" focusable="false">
    <circle class="track" cx="7" cy="7" r="5.5"/>
    <circle class="arc" cx="7" cy="7" r="5.5" pathLength="100" stroke-dasharray="0 100"
      transform="rotate(-90 7 7)"/>
    <line class="ring-tick" part="ring-tick" x1="7" y1="-0.75" x2="7" y2="3.75" hidden/>
  </svg>
</button>
<div class="panel" part="panel" id="panel" role="group" aria-labelledby="head" hidden>
  <p class="head" id="head"><span class="before"></span><strong class="figure"></strong><span class="after"></span></p>
  <p class="used"></p>
  <p class="compact" hidden></p>
  <div class="scale" aria-hidden="true">
    <div class="bar" part="bar"><span class="segment system" data-category="system" hidden></span><span class="segment tools" data-category="tools" hidden></span><span class="segment messages" data-category="messages" hidden></span><span class="segment unknown" data-category="unknown" hidden></span></div>
    <span class="bar-tick" part="bar-tick" hidden></span>
  </div>
  <dl>
    <div class="row system"><dt><span class="swatch system" aria-hidden="true"></span><span class="name"></span></dt><dd></dd></div>
    <div class="row tools"><dt><span class="swatch tools" aria-hidden="true"></span><span class="name"></span></dt><dd></dd></div>
    <div class="row messages"><dt><span class="swatch messages" aria-hidden="true"></span><span class="name"></span></dt><dd></dd></div>
  </dl>
  <p class="error" hidden><strong class="warning-label"></strong> <span class="error-text"></span></p>
  <p class="note partial" hidden></p>
  <p class="note estimate"></p>
  <span class="live" aria-live="polite" aria-atomic="true"></span>
</div>`;

// The parsed template, made at the first meter; connected meters, for addLocale to redraw.
let template = null;
const connected = new Set();

// Without a DOM the class still exists (its statics work), but nothing defines or builds one.
const Base = globalThis.HTMLElement ?? class {};

export class ContextMeter extends Base {
  static get observedAttributes() { return ['session', 'lang', 'open']; }

  /** The least time in ms between two announcements of the panel's live region. */
  static announceInterval = 5000;

  /** The locale tags with a string table, en first. */
  static get locales() { return [...STRINGS.keys()]; }

  /** Adds a locale, or overrides strings of one; keys left out read en. Refuses, before any
   * change, a tag that is not a language tag, an unknown key, a value that is not a string,
   * or a string without its placeholders. */
  static addLocale(tag, strings) {
    let canonical;
    try {
      [canonical] = typeof tag === 'string' ? Intl.getCanonicalLocales(tag) : [];
    } catch {
      canonical = undefined;
    }
    const what = `ContextMeter.addLocale(${describe(tag)}, …)`;
    if (!canonical) throw new TypeError(`${what}: ${describe(tag)} is not a language tag such as "fr" or "pt-BR"`);
    if (!strings || typeof strings !== 'object' || Array.isArray(strings)) {
      throw new TypeError(`${what}: the strings must be an object keyed by ${Object.keys(EN).join(', ')}`);
    }
    for (const [key, value] of Object.entries(strings)) {
      if (!Object.hasOwn(EN, key)) {
        throw new TypeError(`${what}: there is no string ${describe(key)}; the keys are ${Object.keys(EN).join(', ')}`);
      }
      if (typeof value !== 'string') throw new TypeError(`${what}: ${key} must be a string, not ${typeof value}`);
      const missing = (SLOTS[key] ?? []).filter((slot) => !value.includes(slot));
      if (missing.length) {
        throw new TypeError(`${what}: ${key} must keep ${missing.join(' and ')} (en: ${describe(EN[key])})`);
      }
    }
    STRINGS.set(canonical, { ...STRINGS.get(canonical), ...strings });
    picked.clear();
    for (const meter of connected) meter.#render();
  }

  #state = null; // the last good figures (a context/pressure record's), or null
  #error = null; // the warning text of a context/error since then, or null
  #seq = null; // the highest seq applied: an older record is a stale re-delivery
  #bound = null; // without a session attribute, the first record's session
  #record = null;
  #ignored = 0;
  #upgraded = false;
  #els;
  #live = { said: '', want: '', at: -Infinity, timer: 0, baseline: false };

  #onOutside = (e) => { if (this.open && !e.composedPath().includes(this)) this.open = false; };
  #onMove = () => this.#place();

  constructor() {
    super();
    if (!template) {
      template = document.createElement('template');
      template.innerHTML = TEMPLATE;
    }
    const root = this.attachShadow({ mode: 'open' });
    root.append(template.content.cloneNode(true));
    const $ = (s) => root.querySelector(s);
    const rows = Object.fromEntries(CATEGORIES.map((c) => [c, {
      name: $(`.row.${c} .name`), value: $(`.row.${c} dd`) }]));
    const segments = Object.fromEntries([...CATEGORIES, 'unknown'].map((c) => [c, $(`.segment.${c}`)]));
    this.#els = {
      ring: $('.ring'), arc: $('.arc'), ringTick: $('.ring-tick'), panel: $('.panel'),
      before: $('.before'), figure: $('.figure'), after: $('.after'), used: $('.used'),
      compact: $('.compact'), barTick: $('.bar-tick'), segments, rows,
      error: $('.error'), warningLabel: $('.warning-label'), errorText: $('.error-text'),
      partial: $('.partial'), estimate: $('.estimate'), live: $('.live'),
    };
    const { ring, panel } = this.#els;
    // In the top layer the panel is clipped by no ancestor's overflow; the meter still places it.
    if (typeof panel.showPopover === 'function') panel.popover = 'manual';
    ring.addEventListener('click', () => { this.open = !this.open; });
    // Escape from the ring or anywhere in the panel closes it and gives focus back to the ring.
    root.addEventListener('keydown', (e) => {
      if (e.key !== 'Escape' || !this.open) return;
      e.stopPropagation(); // the composer around us must not also act on this Escape
      this.open = false;
      ring.focus();
    });
  }

  connectedCallback() {
    if (!this.#upgraded) {
      this.#upgraded = true;
      // Set before the element was defined, a property is the element's own and hides the
      // accessor: take its value over. session first, so that the record is checked against it.
      for (const p of ['session', 'record', 'open']) {
        if (Object.hasOwn(this, p)) {
          const value = this[p];
          delete this[p];
          this[p] = value;
        }
      }
    }
    connected.add(this);
    document.addEventListener('pointerdown', this.#onOutside, true);
    this.#render();
    this.#showPanel();
  }

  disconnectedCallback() {
    connected.delete(this);
    document.removeEventListener('pointerdown', this.#onOutside, true);
    this.#showPanel();
  }

  attributeChangedCallback(name, old, value) {
    if (old === value) return;
    if (name === 'session') this.reset(); // figures of another session must not linger
    else if (name === 'lang') this.#render();
    else if ((old === null) !== (value === null)) {
      this.#showPanel();
      this.dispatchEvent(new CustomEvent('openchange', { detail: { open: this.open } }));
    }
  }

  get open() { return this.hasAttribute('open'); }
  set open(v) { this.toggleAttribute('open', Boolean(v)); }
  get session() { return this.getAttribute('session'); }
  set session(v) { if (v == null) this.removeAttribute('session'); else this.setAttribute('session', String(v)); }
  get ignored() { return this.#ignored; }
  get error() { return this.#error; }
  get state() { return this.#state && { ...this.#state }; }
  /** The last record applied, as it was given; setting one is update(record) (null: nothing). */
  get record() { return this.#record; }
  set record(r) { if (r != null) this.update(r); }

  /** Feed one parsed record; returns whether it was applied (else it is counted in ignored). */
  update(record) {
    if (!record || typeof record !== 'object') return this.#ignore();
    const { type, session } = record;
    if (type !== 'context/pressure' && type !== 'context/error') return this.#ignore();
    // Records name their session: one that does not can neither be checked nor bind the meter.
    if (typeof session !== 'string') return this.#ignore();
    const want = this.getAttribute('session') ?? this.#bound;
    if (want != null && session !== want) return this.#ignore();
    const seq = num(record.seq);
    // Records of a session come in seq order; an older one is a replay and would turn back time.
    if (seq != null && this.#seq != null && seq < this.#seq) return this.#ignore();
    if (want == null) this.#bound = session;
    if (seq != null) this.#seq = seq;
    const before = this.#state;
    const warned = this.#error;
    if (type === 'context/error') {
      // The last good figures stay on display; only the warning is new.
      this.#error = typeof record.error === 'string' && record.error ? record.error : 'context/error';
    } else {
      const s = { session, seq, partial: record.partial === true,
        timestamp: typeof record.timestamp === 'string' ? record.timestamp : null };
      for (const k of FIGURES) s[k] = num(record[k]);
      // null (not absent, not garbage) in a session seen from its start: its log does not
      // carry that part of the envelope (contract §3).
      s.systemNotInLog = !s.partial && record.systemTokens === null;
      s.toolsNotInLog = !s.partial && record.toolsTokens === null;
      this.#state = s;
      this.#error = null;
    }
    this.#record = record;
    this.#render();
    this.#tell(before, warned);
    return true;
  }

  /** Forget figures, warning, seq, record and the session bound to; keeps the ignored count. */
  reset() {
    const before = this.#state;
    const warned = this.#error;
    this.#state = null;
    this.#error = null;
    this.#seq = null;
    this.#bound = null;
    this.#record = null;
    this.#render();
    this.#tell(before, warned);
  }

  #ignore() {
    this.#ignored += 1;
    return false;
  }

  #tell(before, warned) {
    if (!sameState(before, this.#state)) {
      this.dispatchEvent(new CustomEvent('change', { detail: { state: this.state } }));
    }
    if (warned !== this.#error) {
      this.dispatchEvent(new CustomEvent('warning', { detail: { error: this.#error } }));
    }
  }

  // Shows the panel when open and in a document, else hides it; placed while shown.
  #showPanel() {
    const { ring, panel, live } = this.#els;
    const show = this.open && this.isConnected;
    ring.setAttribute('aria-expanded', String(this.open));
    if (show === !panel.hidden) return;
    panel.hidden = !show;
    const popover = panel.popover === 'manual';
    if (show) {
      if (popover && !panel.matches(':popover-open')) panel.showPopover();
      window.addEventListener('scroll', this.#onMove, { capture: true, passive: true });
      window.addEventListener('resize', this.#onMove, { passive: true });
      // The live region speaks of changes from here on, not of what the panel opens with.
      this.#live.baseline = true;
      this.#render();
    } else {
      if (popover && panel.matches(':popover-open')) panel.hidePopover();
      window.removeEventListener('scroll', this.#onMove, { capture: true });
      window.removeEventListener('resize', this.#onMove);
      clearTimeout(this.#live.timer);
      this.#live.timer = 0;
      live.textContent = '';
    }
  }

  // Above the ring where it fits (a composer sits low), else where there is more room; its end
  // edge on the ring's, kept inside the viewport.
  #place() {
    const { ring, panel } = this.#els;
    if (panel.hidden) return;
    const r = ring.getBoundingClientRect();
    const { clientWidth: vw, clientHeight: vh } = document.documentElement;
    const w = panel.offsetWidth;
    const h = panel.offsetHeight;
    const gap = 8;
    const above = r.top - gap - gap;
    const side = above >= h || above >= vh - r.bottom - gap - gap ? 'top' : 'bottom';
    const top = side === 'top' ? r.top - gap - h : r.bottom + gap;
    const left = getComputedStyle(this).direction === 'rtl' ? r.left : r.right - w;
    panel.style.top = `${Math.round(clamp(top, gap, vh - h - gap))}px`;
    panel.style.left = `${Math.round(clamp(left, gap, vw - w - gap))}px`;
    panel.dataset.side = side;
  }

  // One polite announcement at a time: a change within announceInterval of the last one waits
  // for its end, and then the latest text is said once.
  #announce(text) {
    const live = this.#live;
    live.want = text;
    if (live.baseline) {
      live.baseline = false;
      live.said = text;
      return;
    }
    if (live.timer || text === live.said) return;
    const wait = live.at + Math.max(0, Number(ContextMeter.announceInterval) || 0) - performance.now();
    if (wait <= 0) this.#say();
    else live.timer = setTimeout(() => { live.timer = 0; this.#say(); }, wait);
  }

  #say() {
    const live = this.#live;
    if (this.#els.panel.hidden || live.want === live.said) return;
    this.#els.live.textContent = live.want;
    live.said = live.want;
    live.at = performance.now();
  }

  #locale() {
    const el = this.closest('[lang]');
    return pickLocale((el && el.getAttribute('lang')) || globalThis.navigator?.language);
  }

  #render() {
    const locale = this.#locale();
    const table = STRINGS.get(locale);
    const t = (key) => table[key] ?? EN[key];
    const f = formatsFor(locale);
    const e = this.#els;
    const s = this.#state;
    const occ = s ? s.contextOccupancy : null;
    // The drawing is clamped to [0, 1]; the text keeps the record's figure (over 100% is news).
    const share = occ == null ? 0 : clamp(occ, 0, 1);
    const percent = occ == null ? null : f.percent.format(occ);
    e.ring.lang = locale;
    e.panel.lang = locale;

    // Ring: pathLength 100, so the dash is the percent; butt caps draw nothing at 0. Full is a
    // gapless pattern: a 100-long dash leaves a hairline at the top (the length is approximate).
    const dash = +(share * 100).toFixed(3);
    e.arc.setAttribute('stroke-dasharray', dash >= 100 ? '100 0' : `${dash} 100`);
    const status = percent == null ? t('context.ariaUnknown') : fill(t('context.aria'), { percent });
    const label = this.#error == null ? status : fill(t('context.ariaWarning'), { status });
    e.ring.classList.toggle('warning', this.#error != null);
    this.toggleAttribute('warning', this.#error != null);
    e.ring.setAttribute('aria-label', label);

    // The compaction's tick, on ring and bar, only where both the threshold and the window are
    // known and the threshold is inside the window: never a guess.
    const capacity = s ? s.capacity : null;
    const at = s ? s.compactAtTokens : null;
    const mark = capacity > 0 && at > 0 && at <= capacity ? at / capacity : null;
    e.ringTick.toggleAttribute('hidden', mark == null);
    e.barTick.hidden = mark == null;
    if (mark != null) {
      e.ringTick.setAttribute('transform', `rotate(${+(mark * 360).toFixed(2)} 7 7)`);
      e.barTick.style.insetInlineStart = `${+(mark * 100).toFixed(3)}%`;
    }

    // Header: the one sentence split at its slot, so the figure sits where the language puts it.
    const [before, after = ''] = percent == null ? [t('context.ariaUnknown')] : t('context.aria').split('{percent}');
    setText(e.before, before);
    setText(e.figure, percent ?? '');
    setText(e.after, after);
    e.figure.hidden = percent == null;

    // ~used / capacity: used is the projection, else the bare provider sample.
    const used = s && (s.projectedTokens ?? s.pressureTokens);
    setText(e.used, !s ? t('context.noReading')
      : `${used == null ? t('context.unknown') : `~${f.integer.format(used)}`} / ${capacity == null ? t('context.capacityUnknown') : f.integer.format(capacity)}`);

    // How far to the compaction, when the record says where it comes.
    e.compact.hidden = at == null;
    if (at != null) {
      const left = s.untilCompactTokens;
      const key = left == null ? 'context.compactAtOnly' : left > 0 ? 'context.compactAt' : 'context.compactDue';
      setText(e.compact, fill(t(key), { at: f.compact.format(at), left: left == null ? '' : f.compact.format(left) }));
    }

    // Bar: total length = occupancy; heuristic shares split it. A zero-width segment is hidden
    // (a min-width would paint a sliver at 0%).
    const widths = { system: 0, tools: 0, messages: 0, unknown: 0 };
    if (share > 0) {
      const figures = CATEGORIES.map((c) => s[KEYS[c]]);
      const sum = figures.reduce((a, v) => a + (v ?? 0), 0);
      // A null share (partial session) or nothing to split by: one neutral segment, no invented split.
      if (figures.some((v) => v == null) || sum <= 0) widths.unknown = share * 100;
      else CATEGORIES.forEach((c, i) => { widths[c] = (share * 100 * figures[i]) / sum; });
    }
    for (const [c, seg] of Object.entries(e.segments)) {
      const w = +widths[c].toFixed(4);
      seg.hidden = !(w > 0);
      seg.style.width = w > 0 ? `${w}%` : '';
    }

    // Rows: the raw heuristic figures, never scaled to the provider's; null is unknown, not 0.
    // In a session seen from its start a null system prompt or tool list is one its log does
    // not carry (an agent's own log, adapted): said so, not guessed.
    for (const c of CATEGORIES) {
      const v = s ? s[KEYS[c]] : null;
      const row = e.rows[c];
      const absent = s != null && s[`${c}NotInLog`] === true;
      setText(row.name, t(`context.${c}`));
      setText(row.value, v != null ? `~${f.integer.format(v)}`
        : t(absent ? 'context.notInLog' : 'context.unknown'));
      row.value.classList.toggle('unknown', v == null);
    }

    e.error.hidden = this.#error == null;
    setText(e.warningLabel, t('context.warning'));
    setText(e.errorText, this.#error ?? '');
    e.partial.hidden = !(s && s.partial);
    setText(e.partial, t('context.partial'));
    setText(e.estimate, t('context.estimate'));

    if (!e.panel.hidden) {
      this.#place();
      this.#announce(label);
    }
  }
}

if (globalThis.customElements && !customElements.get('context-meter')) {
  customElements.define('context-meter', ContextMeter);
}
