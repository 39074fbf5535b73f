import { ROOT_CONTEXT, TraceFlags, isSpanContextValid, trace, type Context } from '@opentelemetry/api';

/**
 * The parent of a server span from the request's W3C `traceparent` header
 * (`00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`), so a caller's trace continues through
 * Floe; undefined when the header is absent or malformed (the span then starts a trace). Parsed
 * here rather than through a propagator: the router needs exactly this one header.
 */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export function parentFromTraceparent(header: string | undefined): Context | undefined {
  const m = header === undefined ? null : TRACEPARENT.exec(header.trim().toLowerCase());
  // Version ff is invalid; a future version may append fields, which this form would not match.
  if (!m || m[1] === 'ff') return undefined;
  const spanContext = { traceId: m[2]!, spanId: m[3]!, traceFlags: parseInt(m[4]!, 16) & TraceFlags.SAMPLED, isRemote: true };
  if (!isSpanContextValid(spanContext)) return undefined;
  return trace.setSpanContext(ROOT_CONTEXT, spanContext);
}
