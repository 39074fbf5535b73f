import { FloeError } from '@floe/errors';

/**
 * Pyroscope profile type ids (reference/api-contracts.md §4.3):
 * `<name>:<sample_type>:<sample_unit>:<period_type>:<period_unit>`. The profiles table stores the
 * full five-part id in `profile_type` (services/acceptor profiles-to-rows.ts builds it), so an
 * exposed id is always the stored one (§0 S3: clients split it and index its parts).
 *
 * A selector may name a type by all five parts (optionally a sixth, Pyroscope's delta flag, which
 * Floe's OTLP-only profiles never vary, so it is accepted and ignored) or, as spec 1 "Profile type
 * selector" allows, by the first three (`memory:inuse_space:bytes`): that names every stored type
 * with those parts whatever its period.
 */
export interface ProfileTypeRef {
  name: string;
  sampleType: string;
  sampleUnit: string;
  /** Absent for a three-part reference. */
  period?: { type: string; unit: string };
}

/** One stored profile type as the discovery endpoints list it (proto-JSON names of types.v1.ProfileType). */
export interface ProfileTypeInfo {
  ID: string;
  name: string;
  sampleType: string;
  sampleUnit: string;
  periodType: string;
  periodUnit: string;
}

export const PROFILE_SELECTOR_ERROR = 'FLOE_ERR_PROFILE_SELECTOR';

export function parseProfileTypeRef(id: string): ProfileTypeRef {
  const parts = id.split(':');
  if (parts.length !== 3 && parts.length !== 5 && parts.length !== 6) {
    throw new FloeError('bad_data', `invalid profile type ${JSON.stringify(id.slice(0, 128))}: expected <name>:<sample_type>:<sample_unit>[:<period_type>:<period_unit>]`, { code: PROFILE_SELECTOR_ERROR });
  }
  const [name, sampleType, sampleUnit, periodType, periodUnit] = parts as [string, string, string, string?, string?];
  if (name === '' || sampleType === '') throw new FloeError('bad_data', `invalid profile type ${JSON.stringify(id.slice(0, 128))}: the name and sample type must not be empty`, { code: PROFILE_SELECTOR_ERROR });
  const ref: ProfileTypeRef = { name, sampleType, sampleUnit };
  if (periodType !== undefined) ref.period = { type: periodType, unit: periodUnit ?? '' };
  return ref;
}

/** The stored id a five-part reference names; a three-part one names the prefix `a:b:c:` of ids. */
export function profileTypeKey(ref: ProfileTypeRef): { exact: string } | { prefix: string } {
  const head = `${ref.name}:${ref.sampleType}:${ref.sampleUnit}`;
  return ref.period ? { exact: `${head}:${ref.period.type}:${ref.period.unit}` } : { prefix: `${head}:` };
}

/** The five fields of a stored id (an id not of five parts is listed with what it has). */
export function profileTypeInfo(id: string): ProfileTypeInfo {
  const [name = '', sampleType = '', sampleUnit = '', periodType = '', periodUnit = ''] = id.split(':');
  return { ID: id, name, sampleType, sampleUnit, periodType, periodUnit };
}

/** Whether two references name the same type (render-diff needs both sides of one type). */
export function sameProfileType(a: ProfileTypeRef, b: ProfileTypeRef): boolean {
  const ka = profileTypeKey(a);
  const kb = profileTypeKey(b);
  return 'exact' in ka && 'exact' in kb ? ka.exact === kb.exact : a.name === b.name && a.sampleType === b.sampleType && a.sampleUnit === b.sampleUnit;
}

/** metadata.units, name and sampleRate of a flamebearer of this type (reference/api-contracts.md §4.2). */
export function flamegraphMetadata(ref: ProfileTypeRef): { units: string; name: string; sampleRate: number } {
  const t = ref.sampleType;
  let units = ref.sampleUnit;
  if (t === 'cpu') units = 'samples';
  else if (t === 'inuse_objects' || t === 'alloc_objects' || t === 'goroutine' || t === 'samples') units = 'objects';
  // CPU values are nanoseconds: the UI divides by the sample rate to show seconds.
  return { units, name: t, sampleRate: t === 'cpu' ? 1_000_000_000 : 100 };
}
