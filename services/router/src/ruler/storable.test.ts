import { describe, expect, it } from 'vitest';
import { storableJson } from './storable.ts';

describe('a group state as jsonb can keep it', () => {
  it('replaces NUL and lone surrogates in values and keys, keeps valid pairs and other values', () => {
    const state = { rules: [{ name: 'A', alerts: [{ labels: { 'k\u0000': 'a\u0000b', ok: '😀' }, annotations: { s: 'x\ud800' }, value: 1.5, activeAt: 7 }] }], evaluationTime: 0 };
    const out = storableJson(state);
    expect(JSON.parse(JSON.stringify(out))).toEqual({ rules: [{ name: 'A', alerts: [{ labels: { 'k\ufffd': 'a\ufffdb', ok: '😀' }, annotations: { s: 'x\ufffd' }, value: 1.5, activeAt: 7 }] }], evaluationTime: 0 });
    // The evaluator's own copy is left as it was.
    expect(state.rules[0]!.alerts[0]!.labels['k\u0000']).toBe('a\u0000b');
  });

  it('saves a state without such characters as it is, uncopied', () => {
    const state = { rules: [{ name: 'A', alerts: [{ labels: { k: 'v', ok: '😀' }, value: 1 }] }] };
    expect(storableJson(state)).toBe(state);
  });

  it('keeps a label named __proto__ as a label', () => {
    const labels = JSON.parse('{"__proto__":"x"}') as Record<string, string>;
    expect(Object.keys(storableJson({ labels }).labels)).toEqual(['__proto__']);
  });
});
