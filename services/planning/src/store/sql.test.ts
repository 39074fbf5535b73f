import { describe, expect, it } from 'vitest';
import { containsPattern, Where } from './sql.ts';

describe('Where', () => {
  it('starts with the tenant predicate and numbers parameters in order', () => {
    const w = new Where('f', 'acme');
    w.and(`f.name ILIKE ${w.param('%x%')}`).and(`${w.param('ux')} = ANY(f.tags)`);
    expect(String(w)).toBe('WHERE f.tenant_id = $1 AND f.name ILIKE $2 AND $3 = ANY(f.tags)');
    expect(w.params).toEqual(['acme', '%x%', 'ux']);
  });

  it('keeps hostile values out of the SQL text', () => {
    const w = new Where('f', "acme' OR '1'='1");
    w.and(`f.name = ${w.param("x'; DROP TABLE planning_features;--")}`);
    expect(String(w)).toBe('WHERE f.tenant_id = $1 AND f.name = $2');
  });
});

describe('containsPattern', () => {
  it.each([
    ['check', '%check%'],
    ['50%', '%50\\%%'],
    ['a_b', '%a\\_b%'],
    ['back\\slash', '%back\\\\slash%'],
  ])('%j matches literally as %j', (text, pattern) => {
    expect(containsPattern(text)).toBe(pattern);
  });
});
