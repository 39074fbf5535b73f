import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { JfrError, readJfr } from './reader.ts';
import { jfrStacks, type KindStacks } from './stacks.ts';
import { craftedRecording, str, v } from './crafted.test-support.ts';

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
/** The stacks of each correlation, by its `contextId/spanId/spanName` key. */
const stacksOf = (kinds: Map<string, KindStacks>) => new Map([...kinds].map(([kind, groups]) => [kind, new Map([...groups].map(([key, g]) => [key, g.stacks]))]));

describe('jfrStacks on a JDK 17 recording', () => {
  const kinds = stacksOf(jfrStacks(recording));

  it('reads every execution sample with the stack the JDK reads', () => {
    const want = new Map(expected.executionSample.stacks.map((s) => [folded(s.frames), BigInt(s.count)]));
    expect(kinds.get('cpu')).toEqual(new Map([['0/0/0', want]]));
    expect([...kinds.get('cpu')!.get('0/0/0')!.values()].reduce((a, b) => a + b, 0n)).toBe(BigInt(expected.executionSample.count));
  });

  it('reads every allocation sample: one object and its weight in bytes per event', () => {
    const objects = new Map(expected.objectAllocationSample.stacks.map((s) => [folded(s.frames), BigInt(s.count)]));
    const bytes = new Map(expected.objectAllocationSample.stacks.map((s) => [folded(s.frames), BigInt(s.weight)]));
    expect(kinds.get('alloc_objects')).toEqual(new Map([['0/0/0', objects]]));
    expect(kinds.get('alloc_space')).toEqual(new Map([['0/0/0', bytes]]));
  });

  it('refuses what is not a recording, and a cut one, without reading past the buffer', () => {
    expect(() => readJfr(Buffer.from('not a recording at all, not even close to 68 bytes of header......'), () => true)).toThrow(JfrError);
    expect(() => readJfr(recording.subarray(0, 5000), () => true)).toThrow(JfrError);
    const scrambled = Buffer.from(recording);
    for (let i = 200; i < scrambled.length; i += 97) scrambled[i] = (scrambled[i]! * 31 + 7) & 0xff;
    expect(() => jfrStacks(scrambled)).toThrow(JfrError);
  });
});

describe('crafted recordings', () => {
  // The classes a stack sample needs: a StackTrace of inline frames naming methods of classes.
  const sampleClasses = (symbolField: { name: string; type: string; constantPool?: boolean }) => [
    { id: '1', name: 'long' },
    { id: '2', name: 'java.lang.String' },
    { id: '3', name: 'jdk.types.Symbol', fields: [symbolField] },
    { id: '4', name: 'java.lang.Class', fields: [{ name: 'name', type: '3', constantPool: true }] },
    { id: '5', name: 'jdk.types.Method', fields: [{ name: 'type', type: '4', constantPool: true }, { name: 'name', type: '3', constantPool: true }] },
    { id: '6', name: 'jdk.types.StackFrame', fields: [{ name: 'method', type: '5', constantPool: true }] },
    { id: '7', name: 'jdk.types.StackTrace', fields: [{ name: 'frames', type: '6', array: true }] },
    { id: '8', name: 'jdk.ExecutionSample', fields: [{ name: 'startTime', type: '1' }, { name: 'stackTrace', type: '7', constantPool: true }] },
  ];
  const pools = (symbol: number[]) => [
    { classId: 3, constants: [{ id: 1, value: symbol }] },
    { classId: 4, constants: [{ id: 1, value: v(1) }] },
    { classId: 5, constants: [{ id: 1, value: [...v(1), ...v(1)] }] },
    { classId: 7, constants: [{ id: 1, value: [...v(1), ...v(1)] }] },
  ];
  const sample = [...v(8), ...v(5), ...v(1)];

  it('reads a hand-built sample, the way the JDK lays one out', () => {
    const ok = craftedRecording(sampleClasses({ name: 'string', type: '2' }), pools(str('work')), [sample, sample]);
    expect(stacksOf(jfrStacks(ok))).toEqual(new Map([['cpu', new Map([['0/0/0', new Map([['work.work', 2n]])]])]]));
  });

  it('groups samples by the contextId, spanId and spanName async-profiler writes on them', () => {
    const classes = sampleClasses({ name: 'string', type: '2' });
    const fields = [{ name: 'startTime', type: '1' }, { name: 'stackTrace', type: '7', constantPool: true }, { name: 'contextId', type: '1' }, { name: 'spanId', type: '1' }, { name: 'spanName', type: '1' }];
    classes[7] = { id: '8', name: 'jdk.ExecutionSample', fields };
    const inContext = (id: number, span = 0, name = 0) => [...v(8), ...v(5), ...v(1), ...v(id), ...v(span), ...v(name)];
    const rec = craftedRecording(classes, pools(str('work')), [inContext(0), inContext(7), inContext(7), inContext(9), inContext(7, 0xab, 3)]);
    const groups = jfrStacks(rec).get('cpu')!;
    expect(stacksOf(new Map([['cpu', groups]]))).toEqual(
      new Map([['cpu', new Map([['0/0/0', new Map([['work.work', 1n]])], ['7/0/0', new Map([['work.work', 2n]])], ['9/0/0', new Map([['work.work', 1n]])], ['7/171/3', new Map([['work.work', 1n]])]])]]),
    );
    expect(groups.get('7/171/3')!.correlation).toEqual({ contextId: 7n, spanId: 171n, spanName: 3n });
  });

  it('a Symbol that names itself reads as no name, not a stack overflow', () => {
    const loop = craftedRecording(sampleClasses({ name: 'string', type: '3', constantPool: true }), pools(v(1)), [sample]);
    expect(stacksOf(jfrStacks(loop))).toEqual(new Map([['cpu', new Map([['0/0/0', new Map([['<unknown>', 1n]])]])]]));
  });

  it("the distinct stacks' folded names are paid for from a budget: frames cost a recording bytes whatever their method's name", () => {
    // Three traces of four frames naming one 1,000-character method of a class of that name: 24 KB of names from a few bytes.
    const long = craftedRecording(
      sampleClasses({ name: 'string', type: '2' }),
      [...pools(str('m'.repeat(1000))).slice(0, 3), { classId: 7, constants: [1, 2, 3].map((id) => ({ id, value: [...v(4), ...v(1), ...v(1), ...v(1), ...v(1)] })) }],
      [1, 2, 3].map((id) => [...v(8), ...v(5), ...v(id)]),
    );
    expect(stacksOf(jfrStacks(long, 3 * 4 * 2002)).get('cpu')!.get('0/0/0')!.size).toBe(1);
    expect(() => jfrStacks(long, 2 * 4 * 2002)).toThrow(new JfrError(`its stack traces name more than ${2 * 4 * 2002} bytes of frames`));
  });

  it('finds constants by id in any order; a constant given again replaces the earlier one; a trace no pool holds is no stack', () => {
    const rec = craftedRecording(
      sampleClasses({ name: 'string', type: '2' }),
      [
        { classId: 3, constants: [{ id: 9, value: str('nine') }, { id: 2, value: str('two-old') }, { id: 4, value: str('four') }, { id: 2, value: str('two') }] },
        { classId: 4, constants: [{ id: 1, value: v(9) }] },
        { classId: 5, constants: [{ id: 3, value: [...v(1), ...v(4)] }, { id: 1, value: [...v(1), ...v(2)] }] },
        { classId: 7, constants: [{ id: 8, value: [...v(1), ...v(1)] }, { id: 1, value: [...v(2), ...v(3), ...v(1)] }] },
      ],
      [8, 1, 1, 77].map((trace) => [...v(8), ...v(5), ...v(trace)]),
    );
    // Frames are listed leaf first and folded root first.
    expect(stacksOf(jfrStacks(rec))).toEqual(new Map([['cpu', new Map([['0/0/0', new Map([['nine.two', 1n], ['nine.two;nine.four', 2n]])]])]]));
  });

  it('hands each wanted event to the caller as it is read, with its chunk to resolve references; none are kept', () => {
    const rec = craftedRecording(sampleClasses({ name: 'string', type: '2' }), pools(str('work')), [sample, sample]);
    const seen: string[] = [];
    const result: unknown = readJfr(rec, (name) => name === 'jdk.ExecutionSample', (event, chunk) => {
      const trace = chunk.resolve(event.fields.stackTrace as { pool: bigint; id: bigint });
      seen.push(`${event.type} ${Array.isArray((trace as { frames?: unknown }).frames) ? 'resolved' : 'unresolved'}`);
    });
    expect(result).toBeUndefined();
    expect(seen).toEqual(['jdk.ExecutionSample resolved', 'jdk.ExecutionSample resolved']);
  });

  it('a class id that is no number, and an array of values that take no bytes, are JfrErrors', () => {
    expect(() => readJfr(craftedRecording([{ id: 'x', name: 'long' }], [], []), () => true)).toThrow(/is not a class id/);
    const empty = [
      { id: '1', name: 'jdk.types.Nothing' },
      { id: '2', name: 'jdk.Bomb', fields: [{ name: 'items', type: '1', array: true }] },
    ];
    expect(() => readJfr(craftedRecording(empty, [], [[...v(2), ...v(1_000_000)]]), () => true)).toThrow(/implausible count/);
    expect(() => readJfr(craftedRecording(empty, [], [[...v(2), ...v(5), ...new Array<number>(10).fill(0)]]), () => true)).toThrow(/5 values that take no bytes/);
  });
});
