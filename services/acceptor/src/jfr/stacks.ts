import { MAX_REQUEST_RESOLVED_BYTES } from '../profiles-to-rows.ts';
import { isRef, JfrError, readJfr, type JfrChunk, type JfrObject, type JfrValue } from './reader.ts';

/**
 * The stack samples of a JFR recording (reader.ts) as Pyroscope's Java profile kinds, each a map
 * of folded stacks (`root;…;leaf`, frames `<class with dots>.<method>`) to values, as the Pyroscope
 * Java agent's recordings are read by Pyroscope:
 *
 * | JFR event | kinds (value per event) |
 * |---|---|
 * | jdk.ExecutionSample | cpu (one sample) |
 * | profiler.WallClockSample (async-profiler) | wall (one sample) |
 * | jdk.ObjectAllocationInNewTLAB | alloc_in_new_tlab_objects (1), alloc_in_new_tlab_bytes (tlabSize) |
 * | jdk.ObjectAllocationOutsideTLAB | alloc_outside_tlab_objects (1), alloc_outside_tlab_bytes (allocationSize) |
 * | jdk.ObjectAllocationSample | alloc_objects (1), alloc_space (weight) |
 * | jdk.JavaMonitorEnter | lock_count (1), lock_duration (duration, ns) |
 * | jdk.ThreadPark | block_count (1), block_duration (duration, ns) |
 *
 * Events without a stack trace are skipped; a truncated stack keeps the frames it has.
 */

interface Measure {
  kind: string;
  value: (e: JfrObject, durationNs: (ticks: bigint) => bigint) => bigint;
}

const one = () => 1n;
const field = (name: string) => (e: JfrObject) => toBigInt(e[name]);
const duration = (e: JfrObject, ns: (ticks: bigint) => bigint) => ns(toBigInt(e.duration));

const EVENTS: Readonly<Record<string, readonly Measure[]>> = {
  'jdk.ExecutionSample': [{ kind: 'cpu', value: one }],
  'profiler.WallClockSample': [{ kind: 'wall', value: one }],
  'jdk.ObjectAllocationInNewTLAB': [
    { kind: 'alloc_in_new_tlab_objects', value: one },
    { kind: 'alloc_in_new_tlab_bytes', value: field('tlabSize') },
  ],
  'jdk.ObjectAllocationOutsideTLAB': [
    { kind: 'alloc_outside_tlab_objects', value: one },
    { kind: 'alloc_outside_tlab_bytes', value: field('allocationSize') },
  ],
  'jdk.ObjectAllocationSample': [
    { kind: 'alloc_objects', value: one },
    { kind: 'alloc_space', value: field('weight') },
  ],
  'jdk.JavaMonitorEnter': [
    { kind: 'lock_count', value: one },
    { kind: 'lock_duration', value: duration },
  ],
  'jdk.ThreadPark': [
    { kind: 'block_count', value: one },
    { kind: 'block_duration', value: duration },
  ],
};

function toBigInt(v: JfrValue | undefined): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return BigInt(Math.trunc(v));
  return 0n;
}

/**
 * What ties a sample to the application's context, as the Pyroscope agent's async-profiler writes
 * it on each event: `contextId` names the labels its thread had (the upload's `labels` part;
 * labels.ts), `spanId` the OpenTelemetry span it ran in and `spanName` that span's name (an id
 * into the same part's strings). 0 where the event has none.
 */
export interface Correlation {
  contextId: bigint;
  spanId: bigint;
  spanName: bigint;
}

/** Folded stacks of one profile kind per correlation (keyed by its three ids), each a map of folded stack → value. */
export type KindStacks = Map<string, { correlation: Correlation; stacks: Map<string, bigint> }>;

/**
 * Folded stacks per kind (kinds in the order first seen), grouped by the events' correlation.
 * The distinct stacks may name at most `maxStackBytes` of frames together (a JfrError past it):
 * a frame costs a recording a few bytes whatever its method's name, so a few kilobytes of frames
 * of one long-named method folded to gigabytes of text.
 */
export function jfrStacks(buf: Buffer, maxStackBytes = MAX_REQUEST_RESOLVED_BYTES): Map<string, KindStacks> {
  const out = new Map<string, KindStacks>();
  const budget = { left: maxStackBytes, max: maxStackBytes };
  let current: { chunk: JfrChunk; folded: (ref: JfrValue | undefined) => string | undefined; ns: (ticks: bigint) => bigint } | undefined;
  readJfr(
    buf,
    (name) => Object.hasOwn(EVENTS, name),
    (event, chunk) => {
      if (current?.chunk !== chunk) {
        current = { chunk, folded: stackNamer(chunk, budget), ns: (ticks) => (chunk.ticksPerSecond > 0n ? (ticks * 1_000_000_000n) / chunk.ticksPerSecond : 0n) };
      }
      const { folded, ns } = current;
      const stack = folded(event.fields.stackTrace);
      if (stack === undefined) return;
      const correlation = { contextId: toBigInt(event.fields.contextId), spanId: toBigInt(event.fields.spanId), spanName: toBigInt(event.fields.spanName) };
      const key = `${correlation.contextId}/${correlation.spanId}/${correlation.spanName}`;
      for (const m of EVENTS[event.type]!) {
        const value = m.value(event.fields, ns);
        if (value <= 0n) continue;
        let groups = out.get(m.kind);
        if (!groups) out.set(m.kind, (groups = new Map()));
        let group = groups.get(key);
        if (!group) groups.set(key, (group = { correlation, stacks: new Map() }));
        group.stacks.set(stack, (group.stacks.get(stack) ?? 0n) + value);
      }
    },
  );
  return out;
}

/** A chunk's stack trace references → folded stacks (root first), each trace resolved once and paid for from `budget`. */
function stackNamer(chunk: JfrChunk, budget: { left: number; max: number }): (ref: JfrValue | undefined) => string | undefined {
  const deref = (v: JfrValue | undefined): JfrValue | undefined => (v !== undefined && isRef(v) ? chunk.resolve(v) : v);
  const obj = (v: JfrValue | undefined): JfrObject | undefined => {
    const d = deref(v);
    return d !== null && typeof d === 'object' && !Array.isArray(d) && !isRef(d) ? (d as JfrObject) : undefined;
  };
  const text = (v: JfrValue | undefined, depth = 0): string => {
    const d = deref(v);
    if (typeof d === 'string') return d;
    const sym = obj(d);
    // A Symbol holds its text in `string` (itself possibly in the String pool); a crafted one
    // pointing back at itself names nothing.
    return sym && depth < 4 ? text(sym.string, depth + 1) : '';
  };
  // Frames name methods by pool id: each method is named once per chunk.
  const methods = new Map<bigint, string>();
  const frameName = (method: JfrValue | undefined): string => {
    const key = method !== undefined && isRef(method) ? method.id : undefined;
    const hit = key === undefined ? undefined : methods.get(key);
    if (hit !== undefined) return hit;
    const m = obj(method);
    const cls = obj(m?.type);
    const className = text(cls?.name).replace(/\//g, '.');
    const name = className ? `${className}.${text(m?.name)}` : text(m?.name) || '<unknown>';
    if (key !== undefined) methods.set(key, name);
    return name;
  };
  const traces = new Map<bigint, string | undefined>();
  return (ref) => {
    if (ref === undefined || ref === null || !isRef(ref)) return undefined;
    if (traces.has(ref.id)) return traces.get(ref.id);
    const trace = obj(ref);
    const frames = trace?.frames;
    let folded: string | undefined;
    if (Array.isArray(frames) && frames.length > 0) {
      // JFR lists frames leaf first; folded stacks read root first.
      const names = frames.map((f) => frameName(obj(f)?.method)).reverse();
      let length = names.length - 1;
      for (const n of names) length += n.length;
      budget.left -= length;
      if (budget.left < 0) throw new JfrError(`its stack traces name more than ${budget.max} bytes of frames`);
      folded = names.join(';');
    }
    traces.set(ref.id, folded);
    return folded;
  };
}
