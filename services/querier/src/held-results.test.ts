import { describe, expect, it } from 'vitest';
import { FloeError, toGrpc } from '@floe/errors';
import { Table, vectorFromArray } from 'apache-arrow';
import { HeldResults, tableBytes } from './held-results.ts';

const MB = 1024 * 1024;

const refusal = (f: () => unknown): FloeError => {
  try {
    f();
  } catch (err) {
    if (err instanceof FloeError) return err;
    throw err;
  }
  throw new Error('not refused');
};

describe('HeldResults', () => {
  it('holds results up to half the budget per tenant and the whole budget in all, and frees them on release', () => {
    const held = new HeldResults(8 * MB);
    const a1 = held.charge('a', 3 * MB);
    // 3 + 3 MB is more than tenant a's half of 8 MB.
    const refused = refusal(() => held.charge('a', 3 * MB));
    expect(refused.kind).toBe('rate_limited');
    expect(refused.message).toContain('tenant a already holds 3 MB');
    expect(toGrpc(refused)).toMatchObject({ code: 8, metadata: { 'retry-after': '1' } });
    // Another tenant still has its half.
    const b1 = held.charge('b', 4 * MB);
    expect(held.held).toBe(7 * MB);
    expect(held.heldByTenant()).toEqual({ a: 3 * MB, b: 4 * MB });
    // A third tenant gets what is left of the whole budget, no more.
    const c1 = held.charge('c', 1 * MB);
    expect(refusal(() => held.charge('c', 1)).message).toContain('this querier already holds 8 MB');
    a1();
    a1();
    expect(held.held).toBe(5 * MB);
    expect(held.heldByTenant()).toEqual({ b: 4 * MB, c: 1 * MB });
    const a2 = held.charge('a', 3 * MB);
    for (const release of [a2, b1, c1]) release();
    expect([held.held, held.heldByTenant()]).toEqual([0, {}]);
  });

  it('refuses before running a tenant that holds its whole share, or any tenant when the budget is spent', () => {
    const held = new HeldResults(4 * MB);
    const tooLarge = refusal(() => held.charge('a', 3 * MB));
    expect([tooLarge.kind, tooLarge.message]).toEqual(['execution', 'result too large to hold: 3 MB, and a tenant may hold at most 2 MB (half of querier.max_held_result_mb)']);
    held.admit('a');
    const a = held.charge('a', 2 * MB);
    expect(refusal(() => held.admit('a')).message).toContain('tenant a already holds 2 MB');
    held.admit('b');
    const b = held.charge('b', 2 * MB);
    expect(refusal(() => held.admit('c')).message).toContain('this querier already holds 4 MB');
    a();
    b();
    held.admit('a');
    held.admit('c');
  });

  it("counts a table's Arrow buffers", () => {
    const table = new Table({ n: vectorFromArray(Float64Array.from({ length: 1000 }, (_, i) => i)) });
    expect(tableBytes(table)).toBeGreaterThanOrEqual(8000);
    expect(tableBytes(table)).toBeLessThan(9000);
  });
});
