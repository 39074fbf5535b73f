import { FloeError } from '@floe/errors';
import { create, ExportProfilesServiceRequestSchema, fromBinary, PprofProfileSchema, type ExportProfilesServiceRequest, type PprofProfile } from '@floe/proto';
import { stringKeyValue, type AnyValueInit } from './attributes.ts';
import { inflate, isGzip } from './decode.ts';

/**
 * Pyroscope's push API (push.v1.PusherService/Push): series of labels with pprof profiles, as
 * Grafana Alloy's pyroscope.write and Pyroscope's SDKs send them, become an OTLP profiles export
 * stored like any other (profiles-to-rows.ts). pprof keeps several sample types per profile (Go's
 * heap: alloc_objects, alloc_space, inuse_objects, inuse_space); OTLP one, so each sample type is
 * a profile of its own, named by the series' `__name__` (Pyroscope's profile name). A series'
 * other labels become resource attributes (`service_name` as service.name; Pyroscope's internal
 * `__…__` labels are left out); a sample's pprof labels become its attributes, numeric ones as
 * integers. Samples of value 0 for a sample type are left out of that type's profile, as Pyroscope
 * does. The request's profiles inflate to at most `maxBytes` together (413 past it).
 */

const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_INGEST_DECODE' });

export interface PprofSeries {
  labels: ReadonlyArray<{ name: string; value: string }>;
  /** Encoded pprof (gzip or not), or a profile already built (Pyroscope's folded /ingest bodies). */
  profiles: ReadonlyArray<Uint8Array | PprofProfile>;
  /** The time and duration of profiles that carry none (Pyroscope's /ingest has them in its query). */
  window?: { timeNs: bigint; durationNs: bigint };
}

/** Dictionary tables under construction; index 0 of each is the zero entry OTLP reserves. */
class DictionaryBuilder {
  readonly strings: string[] = [''];
  readonly functions: Array<{ nameStrindex: number; systemNameStrindex: number; filenameStrindex: number; startLine: bigint }> = [{ nameStrindex: 0, systemNameStrindex: 0, filenameStrindex: 0, startLine: 0n }];
  readonly mappings: Array<{ memoryStart: bigint; memoryLimit: bigint; fileOffset: bigint; filenameStrindex: number }> = [{ memoryStart: 0n, memoryLimit: 0n, fileOffset: 0n, filenameStrindex: 0 }];
  readonly locations: Array<{ mappingIndex: number; address: bigint; lines: Array<{ functionIndex: number; line: bigint; column: bigint }> }> = [{ mappingIndex: 0, address: 0n, lines: [] }];
  readonly stacks: Array<{ locationIndices: number[] }> = [{ locationIndices: [] }];
  readonly attributes: Array<{ keyStrindex: number; value: AnyValueInit; unitStrindex: number }> = [{ keyStrindex: 0, value: { value: { case: 'stringValue', value: '' } }, unitStrindex: 0 }];
  readonly #strings = new Map<string, number>([['', 0]]);
  readonly #stacks = new Map<string, number>();
  readonly #attributes = new Map<string, number>();

  string(s: string): number {
    let i = this.#strings.get(s);
    if (i === undefined) this.#strings.set(s, (i = this.strings.push(s) - 1));
    return i;
  }

  stack(locationIndices: number[]): number {
    const key = locationIndices.join(',');
    let i = this.#stacks.get(key);
    if (i === undefined) this.#stacks.set(key, (i = this.stacks.push({ locationIndices }) - 1));
    return i;
  }

  attribute(key: string, value: AnyValueInit): number {
    const k = `${key}\u0000${value.value.case}\u0000${String(value.value.value)}`;
    let i = this.#attributes.get(k);
    if (i === undefined) this.#attributes.set(k, (i = this.attributes.push({ keyStrindex: this.string(key), value, unitStrindex: 0 }) - 1));
    return i;
  }
}

/**
 * The series as one OTLP profiles export (one resource per series), and the name each resource's
 * profiles were pushed under (its `__name__`; empty when none). `hold` is told what each gzipped
 * profile inflated to (the acceptor counts it in flight), and may refuse it by throwing.
 */
export function pprofToOtlp(series: readonly PprofSeries[], maxBytes: number, hold: (inflatedBytes: number) => void = () => {}): { request: ExportProfilesServiceRequest; names: string[] } {
  const dict = new DictionaryBuilder();
  // The request's profiles together inflate to at most maxBytes, not each of them.
  let inflated = 0;
  const resourceProfiles = series.map((s, i) => {
    const attributes = s.labels.filter((l) => !(l.name.startsWith('__') && l.name.endsWith('__'))).map((l) => stringKeyValue(l.name === 'service_name' ? 'service.name' : l.name, l.value));
    const profiles = s.profiles.flatMap((raw, j) => {
      if (!(raw instanceof Uint8Array)) return profilesOf(raw, dict, s.window);
      const at = `series[${i}].samples[${j}]`;
      const bytes = inflatePprof(raw, maxBytes - inflated, maxBytes);
      inflated += bytes.length;
      if (bytes !== raw) hold(bytes.length);
      return profilesOf(decodePprof(bytes, at), dict, s.window);
    });
    return { resource: { attributes }, scopeProfiles: [{ scope: { name: 'pyroscope.push' }, profiles }] };
  });
  const request = create(ExportProfilesServiceRequestSchema, {
    resourceProfiles,
    dictionary: {
      stringTable: dict.strings,
      functionTable: dict.functions,
      mappingTable: dict.mappings,
      locationTable: dict.locations,
      stackTable: dict.stacks,
      attributeTable: dict.attributes,
    },
  });
  return { request, names: series.map((s) => s.labels.find((l) => l.name === '__name__')?.value ?? '') };
}

/** A profile's bytes, gunzipped when they are gzip (the acceptor's own inflate), within what is left of `maxBytes`. */
function inflatePprof(raw: Uint8Array, left: number, maxBytes: number): Uint8Array {
  const tooLarge = () => new FloeError('too_large', `the request's profiles inflate beyond ${maxBytes} bytes`, { code: 'FLOE_ERR_INGEST_TOO_LARGE' });
  if (!isGzip(raw)) {
    if (raw.length > left) throw tooLarge();
    return raw;
  }
  try {
    return inflate(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength), 'gzip', Math.max(1, left));
  } catch (err) {
    throw err instanceof FloeError && err.kind === 'too_large' ? tooLarge() : err;
  }
}

function decodePprof(bytes: Uint8Array, at: string): PprofProfile {
  try {
    return fromBinary(PprofProfileSchema, bytes);
  } catch (err) {
    throw bad(`${at}: the profile is not a valid pprof protobuf message: ${(err as Error).message}`);
  }
}

/** One OTLP profile per pprof sample type, sharing the request's dictionary. */
function profilesOf(p: PprofProfile, dict: DictionaryBuilder, window: PprofSeries['window']) {
  const str = (i: bigint | number): string => {
    const s = p.stringTable[Number(i)];
    if (s === undefined) throw bad(`pprof string index ${i} is out of range (${p.stringTable.length} strings)`);
    return s;
  };
  const functions = new Map<bigint, number>();
  for (const f of p.function) functions.set(f.id, dict.functions.push({ nameStrindex: dict.string(str(f.name)), systemNameStrindex: dict.string(str(f.systemName)), filenameStrindex: dict.string(str(f.filename)), startLine: f.startLine }) - 1);
  const mappings = new Map<bigint, number>();
  for (const m of p.mapping) mappings.set(m.id, dict.mappings.push({ memoryStart: m.memoryStart, memoryLimit: m.memoryLimit, fileOffset: m.fileOffset, filenameStrindex: dict.string(str(m.filename)) }) - 1);
  const locations = new Map<bigint, number>();
  for (const l of p.location) {
    const lines = l.line.map((line) => {
      const functionIndex = functions.get(line.functionId);
      if (functionIndex === undefined) throw bad(`pprof location ${l.id} names function ${line.functionId}, which the profile does not define`);
      return { functionIndex, line: line.line, column: line.column };
    });
    locations.set(l.id, dict.locations.push({ mappingIndex: l.mappingId === 0n ? 0 : (mappings.get(l.mappingId) ?? 0), address: l.address, lines }) - 1);
  }
  const labels = new Map<string, number>();
  const samples = p.sample.map((s) => {
    const stack = dict.stack(
      s.locationId.map((id) => {
        const index = locations.get(id);
        if (index === undefined) throw bad(`pprof sample names location ${id}, which the profile does not define`);
        return index;
      }),
    );
    const attributeIndices = s.label.map((l) => {
      // By the label's string indexes: keyed by its text, a long value was read whole for every sample.
      const id = `${l.key}/${l.str}/${l.num}`;
      let index = labels.get(id);
      if (index === undefined) {
        index = dict.attribute(str(l.key), l.str !== 0n ? { value: { case: 'stringValue', value: str(l.str) } } : { value: { case: 'intValue', value: l.num } });
        labels.set(id, index);
      }
      return index;
    });
    if (s.value.length !== p.sampleType.length) throw bad(`pprof sample has ${s.value.length} values for ${p.sampleType.length} sample types`);
    return { stack, attributeIndices, values: s.value };
  });
  return p.sampleType.map((t, i) => ({
    sampleType: { typeStrindex: dict.string(str(t.type)), unitStrindex: dict.string(str(t.unit)) },
    periodType: p.periodType ? { typeStrindex: dict.string(str(p.periodType.type)), unitStrindex: dict.string(str(p.periodType.unit)) } : undefined,
    period: p.period,
    timeUnixNano: p.timeNanos > 0n ? p.timeNanos : (window?.timeNs ?? 0n),
    durationNano: p.durationNanos > 0n ? p.durationNanos : (window?.durationNs ?? 0n),
    samples: samples.filter((s) => s.values[i] !== 0n).map((s) => ({ stackIndex: s.stack, attributeIndices: s.attributeIndices, values: [s.values[i]!] })),
  }));
}
