import { describe, expect, it } from 'vitest';
import { mapLabels } from './results.ts';

describe('mapLabels', () => {
  it('keeps every non-empty string entry as a label, __proto__ included', () => {
    const labels = mapLabels(new Map<string, unknown>([['__proto__', 'x'], ['trace_id', 'abc'], ['empty', ''], ['n', 1]]));
    expect(Object.keys(labels).sort()).toEqual(['__proto__', 'trace_id']);
    expect(Object.hasOwn(labels, '__proto__') && labels['__proto__']).toBe('x');
    expect(JSON.parse(JSON.stringify(labels))).toEqual(JSON.parse('{"__proto__":"x","trace_id":"abc"}'));
    expect(mapLabels({ toJSON: () => ({ a: 'b' }) })).toEqual(Object.assign(Object.create(null), { a: 'b' }));
    expect(Object.keys(mapLabels(null))).toEqual([]);
  });
});
