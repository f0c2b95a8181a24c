// What a TypeScript page may write against the package's types, and what they refuse
// (each @ts-expect-error fails the check if the line stops being an error).
import { ContextMeter } from '@agent-fold/context-meter';
import type { ContextRecord, PressureRecord } from '@agent-fold/context-meter';

const meter = document.createElement('context-meter');
const typed: ContextMeter = meter; // HTMLElementTagNameMap knows the tag
const found = document.querySelector('context-meter');
if (found) found.open = true;

const v5: PressureRecord = {
  type: 'context/pressure', session: 's-42', seq: 118, pressureTokens: 4227, projectedTokens: 244,
  capacity: 100000, contextOccupancy: 0.00244, systemTokens: 180, toolsTokens: 2310,
  messageTokens: 64, estimateScale: 1.344, compactAtTokens: 167000, untilCompactTokens: 166756,
  stateVersion: 5,
};
const v4: ContextRecord = { ...v5, stateVersion: 4, compactAtTokens: undefined, untilCompactTokens: undefined };
typed.record = v5;
typed.record = null;
const applied: boolean = typed.update(v4);
typed.session = 's-42';
typed.session = null;

typed.addEventListener('change', (e) => {
  const capacity: number | null = e.detail.state ? e.detail.state.capacity : null;
  // @ts-expect-error: state may be null
  const direct: number | null = e.detail.state.capacity;
  void capacity; void direct;
});
typed.addEventListener('warning', (e) => { const text: string | null = e.detail.error; void text; });
typed.addEventListener('openchange', (e) => { const open: boolean = e.detail.open; void open; });
typed.addEventListener('click', (e) => { const x: number = e.clientX; void x; });

ContextMeter.addLocale('fr', { 'context.aria': '{percent} du contexte utilisé' });
ContextMeter.announceInterval = 2000;
const tags: string[] = ContextMeter.locales;

// @ts-expect-error: no such string
ContextMeter.addLocale('fr', { 'context.nope': 'x' });
// @ts-expect-error: open is a boolean
typed.open = 'yes';
// @ts-expect-error: state is read-only
typed.state = null;
// @ts-expect-error: a record's type is one of two
const bad: ContextRecord = { ...v5, type: 'frame' };

void applied; void tags; void bad;
