// Types of @agent-fold/context-meter (context-meter.js), written by hand: the records it reads,
// the element, its events, and the tag in HTMLElementTagNameMap.

/** The figures of a pressure record; null where they are unknown. */
export interface ContextFigures {
  /** The provider's prompt size at its last reading; null before the first. */
  pressureTokens: number | null;
  /** That reading plus the estimated change since; null before the first reading. */
  projectedTokens: number | null;
  /** The context window; null when neither the log nor the `capacity` param names it. */
  capacity: number | null;
  /** projectedTokens (else pressureTokens) / capacity; null when either is unknown. */
  contextOccupancy: number | null;
  /** `~` estimates of the envelope and the surface; null where a partial session cannot know. */
  systemTokens: number | null;
  toolsTokens: number | null;
  messageTokens: number | null;
}

/** A `context/pressure` record of agent-fold's pressure view. */
export interface PressureRecord extends ContextFigures {
  type: 'context/pressure';
  session: string;
  seq: number;
  /** The input frame's stamp; absent when the frame had none. */
  timestamp?: string;
  estimateScale: number;
  /** From stateVersion 5: the prompt size at which the agent compacts on its own; null when unknown. */
  compactAtTokens?: number | null;
  /** From stateVersion 5: max(0, compactAtTokens − projectedTokens); null when either is null. */
  untilCompactTokens?: number | null;
  /** Present (true) in a session joined mid-stream. */
  partial?: true;
  stateVersion: number;
}

/** A `context/error` record: the session's figures could not be updated. */
export interface ErrorRecord {
  type: 'context/error';
  session: string;
  seq?: number | null;
  error: string;
  stateVersion?: number;
}

export type ContextRecord = PressureRecord | ErrorRecord;

/** What a meter shows: the last applied pressure record's figures, absent ones null. */
export interface ContextMeterState extends ContextFigures {
  session: string;
  seq: number | null;
  timestamp: string | null;
  partial: boolean;
  estimateScale: number | null;
  compactAtTokens: number | null;
  untilCompactTokens: number | null;
}

/** A locale's strings; `{percent}`, `{status}`, `{at}` and `{left}` are filled in by the meter. */
export interface ContextMeterStrings {
  'context.aria': string;
  'context.ariaUnknown': string;
  'context.ariaWarning': string;
  'context.capacityUnknown': string;
  'context.unknown': string;
  'context.notInLog': string;
  'context.system': string;
  'context.tools': string;
  'context.messages': string;
  'context.compactAt': string;
  'context.compactDue': string;
  'context.compactAtOnly': string;
  'context.partial': string;
  'context.estimate': string;
  'context.noReading': string;
  'context.warning': string;
}

export interface ContextMeterChangeDetail {
  state: ContextMeterState | null;
}

export interface ContextMeterWarningDetail {
  error: string | null;
}

export interface ContextMeterOpenChangeDetail {
  open: boolean;
}

export interface ContextMeterEventMap extends HTMLElementEventMap {
  /** The figures shown changed (a record applied, or reset). */
  change: CustomEvent<ContextMeterChangeDetail>;
  /** The warning appeared, changed or cleared. */
  warning: CustomEvent<ContextMeterWarningDetail>;
  /** The panel opened or closed. */
  openchange: CustomEvent<ContextMeterOpenChangeDetail>;
}

/** The name of one of the meter's own events. */
type MeterEvent = keyof ContextMeterEventMap;
/** A listener for the meter's event `K`, called with the meter as `this`. */
type MeterListener<K extends MeterEvent> = (this: ContextMeter, ev: ContextMeterEventMap[K]) => unknown;

export class ContextMeter extends HTMLElement {
  static readonly observedAttributes: string[];
  /** The least time in ms between two announcements of the panel's live region (default 5000). */
  static announceInterval: number;
  /** The locale tags with a string table, en first. */
  static readonly locales: string[];
  /** Adds a locale, or overrides strings of one; keys left out read en. Throws a TypeError,
   * changing nothing, on a bad tag, an unknown key, a non-string, or a lost placeholder. */
  static addLocale(tag: string, strings: Partial<ContextMeterStrings>): void;

  /** Only this session's records are applied; unset, the first record's session. */
  session: string | null;
  /** The panel is shown (reflects the `open` attribute). */
  open: boolean;
  /** The last record applied, as given; setting one is `update(record)`, null does nothing. */
  get record(): ContextRecord | null;
  set record(record: ContextRecord | null | undefined);
  /** A copy of what the meter shows, or null before any pressure record. */
  readonly state: ContextMeterState | null;
  /** The warning of a `context/error` since the last pressure record, or null. */
  readonly error: string | null;
  /** How many records were not applied (other type or session, older seq, not a record). */
  readonly ignored: number;

  /** Applies one parsed record; returns whether it was applied. */
  update(record: unknown): boolean;
  /** Forgets figures, warning, seq, record and the session bound to. */
  reset(): void;

  addEventListener<K extends MeterEvent>(type: K, listener: MeterListener<K>, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends MeterEvent>(type: K, listener: MeterListener<K>, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject, options?: boolean | EventListenerOptions): void;
}

declare global {
  interface HTMLElementTagNameMap {
    'context-meter': ContextMeter;
  }
}
