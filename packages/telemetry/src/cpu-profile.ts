import { randomBytes } from 'node:crypto';
import type { ExportProfilesServiceRequestSchema, MessageInitShape } from '@floe/proto';

/**
 * A V8 CPU profile (node:inspector's Profiler.stop) as one OTLP profiles v1development request,
 * in the dictionary layout the acceptor resolves (services/acceptor/src/profiles-to-rows.ts):
 * index 0 of every table is the empty entry, a stack lists its locations leaf first, one
 * location per distinct (function, line) of a V8 call frame.
 *
 * V8 records a call tree of nodes and, per sample, the id of the node that was running. A stack
 * is the path from that node up to (not including) V8's "(root)" node; its value is
 * samples × sampling period in CPU nanoseconds (spec 1, Self-profiling). Samples of "(idle)" are
 * dropped: the thread was waiting, not using CPU.
 */

/** The parts of a V8 Profiler.Profile this conversion reads. */
export interface V8CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber?: number; scriptId?: string };
    hitCount?: number;
    children?: number[];
  }>;
  /** Microseconds, V8's monotonic clock. */
  startTime: number;
  endTime: number;
  /** The id of the running node per sample (absent: each node's hitCount is used). */
  samples?: number[];
}

export interface CpuProfileMeta {
  /** Resource attributes (service.name, deployment.environment, …). */
  resource: Readonly<Record<string, string>>;
  /** The sampling period, nanoseconds. */
  periodNs: bigint;
  /** Wall-clock start of the profile. */
  startUnixNano: bigint;
  scope?: { name: string; version: string };
}

export type ProfilesRequestInit = MessageInitShape<typeof ExportProfilesServiceRequestSchema>;

const IGNORED_FRAMES = new Set(['(root)']);
const IDLE = '(idle)';

/** Interns values of a table whose entry 0 is the empty one. */
class Table<T> {
  readonly rows: T[];
  readonly #index = new Map<string, number>();
  constructor(empty: T) {
    this.rows = [empty];
  }
  intern(key: string, make: () => T): number {
    let i = this.#index.get(key);
    if (i === undefined) {
      i = this.rows.length;
      this.rows.push(make());
      this.#index.set(key, i);
    }
    return i;
  }
}

export function cpuProfileToOtlp(profile: V8CpuProfile, meta: CpuProfileMeta): ProfilesRequestInit {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const hits = new Map<number, number>();
  if (profile.samples && profile.samples.length > 0) {
    for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
  } else {
    for (const n of profile.nodes) if (n.hitCount) hits.set(n.id, n.hitCount);
  }

  const strings = new Table<string>('');
  const str = (s: string) => strings.intern(s, () => s);
  const functions = new Table<{ nameStrindex?: number; filenameStrindex?: number }>({});
  const locations = new Table<{ lines?: Array<{ functionIndex: number; line: bigint }> }>({});
  const stacks = new Table<{ locationIndices?: number[] }>({});
  const cpu = str('cpu');
  const nanoseconds = str('nanoseconds');

  const locationOf = (frame: V8CpuProfile['nodes'][number]['callFrame']) => {
    const name = frame.functionName || '(anonymous)';
    const fn = functions.intern(`${name}\u0000${frame.url}`, () => ({ nameStrindex: str(name), ...(frame.url ? { filenameStrindex: str(frame.url) } : {}) }));
    // V8 lines are 0-based; OTLP's are 1-based with 0 meaning unknown.
    const line = frame.lineNumber >= 0 ? BigInt(frame.lineNumber + 1) : 0n;
    return locations.intern(`${fn}:${line}`, () => ({ lines: [{ functionIndex: fn, line }] }));
  };

  const valueByStack = new Map<number, bigint>();
  for (const [id, count] of hits) {
    const leaf = byId.get(id);
    if (!leaf || leaf.callFrame.functionName === IDLE) continue;
    const path: number[] = [];
    for (let n: typeof leaf | undefined = leaf; n; n = byId.get(parent.get(n.id) ?? -1)) {
      if (!IGNORED_FRAMES.has(n.callFrame.functionName)) path.push(locationOf(n.callFrame));
    }
    const stack = stacks.intern(path.join(','), () => ({ locationIndices: path }));
    valueByStack.set(stack, (valueByStack.get(stack) ?? 0n) + BigInt(count) * meta.periodNs);
  }

  const samples = [...valueByStack].map(([stackIndex, value]) => ({ stackIndex, values: [value] }));
  return {
    dictionary: {
      stringTable: strings.rows,
      functionTable: functions.rows,
      mappingTable: [{}],
      locationTable: locations.rows,
      stackTable: stacks.rows,
      linkTable: [{}],
      attributeTable: [{}],
    },
    resourceProfiles: [
      {
        resource: { attributes: Object.entries(meta.resource).map(([key, value]) => ({ key, value: { value: { case: 'stringValue' as const, value } } })) },
        scopeProfiles: [
          {
            ...(meta.scope ? { scope: meta.scope } : {}),
            profiles: [
              {
                sampleType: { typeStrindex: cpu, unitStrindex: nanoseconds },
                periodType: { typeStrindex: cpu, unitStrindex: nanoseconds },
                period: meta.periodNs,
                timeUnixNano: meta.startUnixNano,
                durationNano: BigInt(Math.max(0, Math.round((profile.endTime - profile.startTime) * 1000))),
                profileId: randomBytes(16),
                samples,
              },
            ],
          },
        ],
      },
    ],
  };
}

