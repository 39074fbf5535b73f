import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { JfrError, readJfr } from './reader.ts';
import { jfrStacks } from './stacks.ts';

/**
 * The JFR reader against the JDK's own reading of a real recording
 * (test/fixtures/jfr: a JDK 17 recording of Busy.java, and what `jfr print --json` says of it,
 * reduced by expected.mjs): every execution and allocation sample, grouped by stack, with the
 * same counts and weights.
 */
const FIXTURES = new URL('../../test/fixtures/jfr/', import.meta.url);
const recording = readFileSync(new URL('cpu-alloc.jfr', FIXTURES));
const expected = JSON.parse(readFileSync(new URL('cpu-alloc.expected.json', FIXTURES), 'utf8')) as {
  executionSample: { count: number; stacks: Array<{ frames: string[]; count: number }> };
  objectAllocationSample: { count: number; totalWeight: number; stacks: Array<{ frames: string[]; count: number; weight: number }> };
};
/** expected.json lists frames leaf first; folded stacks read root first. */
const folded = (frames: string[]) => [...frames].reverse().join(';');

describe('jfrStacks on a JDK 17 recording', () => {
  const kinds = jfrStacks(recording);

  it('reads every execution sample with the stack the JDK reads', () => {
    const want = new Map(expected.executionSample.stacks.map((s) => [folded(s.frames), BigInt(s.count)]));
    expect(kinds.get('cpu')).toEqual(want);
    expect([...kinds.get('cpu')!.values()].reduce((a, b) => a + b, 0n)).toBe(BigInt(expected.executionSample.count));
  });

  it('reads every allocation sample: one object and its weight in bytes per event', () => {
    const objects = new Map(expected.objectAllocationSample.stacks.map((s) => [folded(s.frames), BigInt(s.count)]));
    const bytes = new Map(expected.objectAllocationSample.stacks.map((s) => [folded(s.frames), BigInt(s.weight)]));
    expect(kinds.get('alloc_objects')).toEqual(objects);
    expect(kinds.get('alloc_space')).toEqual(bytes);
  });

  it('refuses what is not a recording, and a cut one, without reading past the buffer', () => {
    expect(() => readJfr(Buffer.from('not a recording at all, not even close to 68 bytes of header......'), () => true)).toThrow(JfrError);
    expect(() => readJfr(recording.subarray(0, 5000), () => true)).toThrow(JfrError);
    const scrambled = Buffer.from(recording);
    for (let i = 200; i < scrambled.length; i += 97) scrambled[i] = (scrambled[i]! * 31 + 7) & 0xff;
    expect(() => jfrStacks(scrambled)).toThrow();
  });
});
