/**
 * Profile summaries (spec 1, "Profile row": profile.id, timestamp, duration, sample.type,
 * service.name and more), one per row of plan.ts's planProfilesByTrace (for one trace) or
 * planProfileList (the native Query IR's `profiles` view, each with its own link). The keys use the dotted
 * OpenTelemetry spelling the spec names; the trace query API's include_profiles answer is meant
 * to attach the same objects (spec 1, profile query rule 4).
 */
export interface ProfileSummary {
  /** 32 hex digits, null when the sender set no profile id. */
  'profile.id': string | null;
  /** Five-part Pyroscope id. */
  'profile.type': string;
  'sample.type': string;
  'sample.unit': string;
  'service.name': string;
  /** RFC 3339, nanosecond precision, UTC. */
  timestamp: string;
  /** Unix nanoseconds as a decimal string (exact beyond 2^53). */
  time_unix_nano: string;
  /** Nanoseconds. */
  duration: number;
  'trace.id': string;
  /** The profile's own linked span when it is in this trace (the span carrying most of its samples), else null. */
  'span.id': string | null;
  /** Sum of every sample value, in sample.unit. */
  value: number;
  /** Sum of the values of the samples linked to this trace. */
  linked_value: number;
}

const text = (v: unknown) => (v === null || v === undefined ? '' : String(v));

/** RFC 3339 with nine fractional digits; Date alone stops at milliseconds. */
export function rfc3339Nano(ns: bigint): string {
  const ms = ns / 1_000_000n - (ns % 1_000_000n < 0n ? 1n : 0n);
  const iso = new Date(Number(ms)).toISOString();
  const fraction = (((ns % 1_000_000_000n) + 1_000_000_000n) % 1_000_000_000n).toString().padStart(9, '0');
  return `${iso.slice(0, 19)}.${fraction}Z`;
}

/** A listed profile's summary: its own trace and span link (null when it has none), no linked value. */
export type ListedProfileSummary = Omit<ProfileSummary, 'trace.id' | 'linked_value'> & { 'trace.id': string | null };

export function listedProfileSummaryOf(row: Record<string, unknown>): ListedProfileSummary {
  const { linked_value: _linked, ...summary } = profileSummaryOf(row, text(row.trace_id));
  return { ...summary, 'trace.id': row.trace_id ? String(row.trace_id) : null };
}

export function profileSummaryOf(row: Record<string, unknown>, traceId: string): ProfileSummary {
  const time = BigInt(text(row.time_unix_nano) || '0');
  const ownTrace = text(row.trace_id) === traceId;
  return {
    'profile.id': row.profile_id === null || row.profile_id === undefined ? null : String(row.profile_id),
    'profile.type': text(row.profile_type),
    'sample.type': text(row.sample_type),
    'sample.unit': text(row.sample_unit),
    'service.name': text(row.service_name),
    timestamp: rfc3339Nano(time),
    time_unix_nano: time.toString(),
    duration: Number(row.duration_nano ?? 0),
    'trace.id': traceId,
    'span.id': ownTrace && row.span_id ? String(row.span_id) : null,
    value: Number(row.total_value ?? 0),
    linked_value: Number(row.linked_value ?? 0),
  };
}
