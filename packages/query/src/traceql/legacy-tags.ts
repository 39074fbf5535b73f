import type { SpanCondition, SpanField, SpanValue } from '../ir/traces.ts';

/**
 * Tempo's search by tags, from before TraceQL (the HTTP `tags` parameter, SearchRequest.Tags), as
 * conditions: `name` and `service.name` are their intrinsics, any other key an attribute of the
 * span or its resource; values that read as an integer, a decimal number or true/false compare
 * as that type, anything else as text.
 */
export function legacyTagConditions(pairs: Iterable<readonly [string, string]>): SpanCondition[] {
  const out: SpanCondition[] = [];
  for (const [key, value] of pairs) {
    const field: SpanField = key === 'name' ? { kind: 'name' } : key === 'service.name' ? { kind: 'service' } : { kind: 'attribute', scope: 'any', key };
    out.push({ field, value: field.kind === 'attribute' ? typedValue(value) : { type: 'string', value } });
  }
  return out;
}

function typedValue(text: string): SpanValue {
  if (/^-?\d{1,18}$/.test(text)) return { type: 'int', value: BigInt(text) };
  if (/^-?\d+\.\d+$/.test(text)) return { type: 'float', value: Number(text) };
  if (text === 'true' || text === 'false') return { type: 'bool', value: text === 'true' };
  return { type: 'string', value: text };
}
