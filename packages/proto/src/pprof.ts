import { create } from '@bufbuild/protobuf';
import { ProfileSchema, type Profile } from './gen/perftools/profiles/profile_pb.js';

export interface NamedStackProfile {
  sampleTypes: ReadonlyArray<{ type: string; unit: string }>;
  periodType?: { type: string; unit: string };
  period?: bigint;
  timeNanos: bigint;
  durationNanos: bigint;
  /** Stacks as frame names, leaf first, with one value per sample type and the sample's string labels. */
  stacks: Iterable<{ frames: readonly string[]; values: bigint[]; labels?: ReadonlyArray<{ key: string; value: string }> }>;
}

/**
 * A pprof profile of stacks known only by frame names (Pyroscope's folded bodies, Floe's stored
 * stacks): one function and one location per distinct name, ids from 1 as pprof wants them, the
 * first sample type the default.
 */
export function pprofOfNamedStacks(p: NamedStackProfile): Profile {
  const strings = [''];
  const stringIds = new Map<string, bigint>([['', 0n]]);
  const str = (s: string): bigint => {
    let id = stringIds.get(s);
    if (id === undefined) stringIds.set(s, (id = BigInt(strings.push(s) - 1)));
    return id;
  };
  const sampleType = p.sampleTypes.map((t) => ({ type: str(t.type), unit: str(t.unit) }));
  const periodType = p.periodType ? { type: str(p.periodType.type), unit: str(p.periodType.unit) } : undefined;
  const locations = new Map<string, bigint>();
  const functions: Array<{ id: bigint; name: bigint; systemName: bigint }> = [];
  const locationList: Array<{ id: bigint; line: Array<{ functionId: bigint }> }> = [];
  const locationOf = (frame: string): bigint => {
    let id = locations.get(frame);
    if (id === undefined) {
      id = BigInt(locations.size + 1);
      locations.set(frame, id);
      const name = str(frame);
      functions.push({ id, name, systemName: name });
      locationList.push({ id, line: [{ functionId: id }] });
    }
    return id;
  };
  const sample = [...p.stacks].map((s) => ({
    locationId: s.frames.map(locationOf),
    value: s.values,
    label: (s.labels ?? []).map((l) => ({ key: str(l.key), str: str(l.value) })),
  }));
  return create(ProfileSchema, {
    sampleType,
    sample,
    location: locationList,
    function: functions,
    stringTable: strings,
    periodType,
    period: p.period ?? 0n,
    timeNanos: p.timeNanos,
    durationNanos: p.durationNanos,
    defaultSampleType: sampleType[0]?.type ?? 0n,
  });
}
