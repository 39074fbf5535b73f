import { describe, expect, it } from 'vitest';
import { FileSchemas } from './file-schemas.ts';

/** A probe over a fixed table of schema keys that records what it was asked. */
function probeOf(keys: Record<string, string>) {
  const asked: string[][] = [];
  const probe = async (paths: readonly string[]) => {
    asked.push([...paths]);
    return paths.map((p) => {
      const k = keys[p];
      if (k === undefined) throw new Error(`no file ${p}`);
      return k;
    });
  };
  return { probe, asked };
}

describe('FileSchemas', () => {
  it('says whether files share one schema, probing each path once', async () => {
    const { probe, asked } = probeOf({ '/a': 'v1', '/b': 'v1', '/c': 'v2' });
    const schemas = new FileSchemas(probe);
    expect(await schemas.same([], 1000)).toBe(true);
    expect(await schemas.same(['/c'], 1000)).toBe(true);
    expect(asked).toEqual([]);
    expect(await schemas.same(['/a', '/b'], 1000)).toBe(true);
    expect(await schemas.same(['/a', '/b', '/c'], 1000)).toBe(false);
    expect(await schemas.same(['/b', '/a'], 1000)).toBe(true);
    expect(asked).toEqual([['/a', '/b'], ['/c']]);
  });

  it('a failed probe answers false (the view is read by name) and keeps nothing', async () => {
    const { probe, asked } = probeOf({ '/a': 'v1', '/b': 'v1' });
    const schemas = new FileSchemas(probe);
    expect(await schemas.same(['/a', '/gone'], 1000)).toBe(false);
    expect(await schemas.same(['/a', '/b'], 1000)).toBe(true);
    expect(asked).toEqual([['/a', '/gone'], ['/a', '/b']]);
  });
});
