import { storableText, whyUnstorable } from '../storable-text.ts';

/**
 * A group's state as the metadata DB can keep it. The state is saved as jsonb, which holds
 * neither U+0000 nor a lone surrogate; an alert template can produce both (`{{ "a\x00b" }}`), and
 * one such annotation would fail every save of the group, so that /api/v1/rules never showed its
 * evaluations and a new evaluator restored nothing. Only the saved copy is changed (each such
 * character becomes U+FFFD): the evaluator keeps matching the alerts it holds in memory.
 */
export function storableJson<T>(value: T): T {
  // Saved after every evaluation: the state is copied only in the rare case it must be.
  return unstorable(value) ? (clean(value) as T) : value;
}

function unstorable(value: unknown): boolean {
  if (typeof value === 'string') return whyUnstorable(value) !== undefined;
  if (Array.isArray(value)) return value.some(unstorable);
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) if (whyUnstorable(k) !== undefined || unstorable(v)) return true;
  }
  return false;
}

function clean(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(clean);
  if (value !== null && typeof value === 'object') {
    // Without a prototype, as the label sets it copies: a label named __proto__ stays a label.
    const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    for (const [k, v] of Object.entries(value)) out[storableText(k)] = clean(v);
    return out;
  }
  return value;
}
