import { randomBytes } from 'node:crypto';
import type { ExportProfilesServiceRequestSchema, MessageInitShape } from '@floe/proto';

/**
 * The OTLP profiles v1development request both V8 conversions build (cpu-profile.ts,
 * heap-profile.ts): one dictionary shared by every profile of the request, in the layout the
 * acceptor resolves (services/acceptor/src/profiles-to-rows.ts): index 0 of every table is the
 * empty entry, a stack lists its locations leaf first, one location per distinct (function, line)
 * of a V8 call frame. Each profile has exactly one sample type (one row of the profiles table).
 */

export type ProfilesRequestInit = MessageInitShape<typeof ExportProfilesServiceRequestSchema>;
type ProfileInit = NonNullable<NonNullable<NonNullable<ProfilesRequestInit['resourceProfiles']>[number]['scopeProfiles']>[number]['profiles']>[number];

/** A V8 call frame (Runtime.CallFrame), as both the CPU and the sampling heap profiler report it. */
export interface V8CallFrame {
  functionName: string;
  url: string;
  /** 0-based; -1 when unknown. */
  lineNumber: number;
  columnNumber?: number;
  scriptId?: string;
}

/** Who the request's profiles are about. */
export interface ProfileRequestMeta {
  /** Resource attributes (service.name, deployment.environment, …). */
  resource: Readonly<Record<string, string>>;
  scope?: { name: string; version: string };
}

/** One profile of the request: its types, its time and a value per stack (builder stack indexes). */
export interface ProfileEntry {
  sampleType: readonly [type: string, unit: string];
  periodType: readonly [type: string, unit: string];
  period: bigint;
  timeUnixNano: bigint;
  durationNano: bigint;
  values: ReadonlyMap<number, bigint>;
}

/** V8's pseudo-frame at the top of every call tree; it is no frame of the program. */
const ROOT_FRAME = '(root)';

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

export class OtlpProfileBuilder {
  readonly #strings = new Table<string>('');
  readonly #functions = new Table<{ nameStrindex?: number; filenameStrindex?: number }>({});
  readonly #locations = new Table<{ lines?: Array<{ functionIndex: number; line: bigint }> }>({});
  readonly #stacks = new Table<{ locationIndices?: number[] }>({});
  readonly #profiles: ProfileInit[] = [];

  str(s: string): number {
    return this.#strings.intern(s, () => s);
  }

  #location(frame: V8CallFrame): number {
    const name = frame.functionName || '(anonymous)';
    const fn = this.#functions.intern(`${name}\u0000${frame.url}`, () => ({ nameStrindex: this.str(name), ...(frame.url ? { filenameStrindex: this.str(frame.url) } : {}) }));
    // V8 lines are 0-based; OTLP's are 1-based with 0 meaning unknown.
    const line = frame.lineNumber >= 0 ? BigInt(frame.lineNumber + 1) : 0n;
    return this.#locations.intern(`${fn}:${line}`, () => ({ lines: [{ functionIndex: fn, line }] }));
  }

  /** The stack of a call path given leaf first (V8's "(root)" frame is left out). */
  stack(framesLeafFirst: Iterable<V8CallFrame>): number {
    const path: number[] = [];
    for (const frame of framesLeafFirst) if (frame.functionName !== ROOT_FRAME) path.push(this.#location(frame));
    return this.#stacks.intern(path.join(','), () => ({ locationIndices: path }));
  }

  addProfile(p: ProfileEntry): void {
    this.#profiles.push({
      sampleType: { typeStrindex: this.str(p.sampleType[0]), unitStrindex: this.str(p.sampleType[1]) },
      periodType: { typeStrindex: this.str(p.periodType[0]), unitStrindex: this.str(p.periodType[1]) },
      period: p.period,
      timeUnixNano: p.timeUnixNano,
      durationNano: p.durationNano,
      profileId: randomBytes(16),
      samples: [...p.values].map(([stackIndex, value]) => ({ stackIndex, values: [value] })),
    });
  }

  /** The request: every profile added so far, under one resource and scope. */
  request(meta: ProfileRequestMeta): ProfilesRequestInit {
    return {
      dictionary: {
        stringTable: this.#strings.rows,
        functionTable: this.#functions.rows,
        mappingTable: [{}],
        locationTable: this.#locations.rows,
        stackTable: this.#stacks.rows,
        linkTable: [{}],
        attributeTable: [{}],
      },
      resourceProfiles: [
        {
          resource: { attributes: Object.entries(meta.resource).map(([key, value]) => ({ key, value: { value: { case: 'stringValue' as const, value } } })) },
          scopeProfiles: [{ ...(meta.scope ? { scope: meta.scope } : {}), profiles: this.#profiles }],
        },
      ],
    };
  }
}

/** Walks a call tree from a node up to its root: the frames of a stack, leaf first. */
export function* pathToRoot<N extends { callFrame: V8CallFrame }>(leaf: N, parentOf: (node: N) => N | undefined): Generator<V8CallFrame> {
  for (let n: N | undefined = leaf; n; n = parentOf(n)) yield n.callFrame;
}
