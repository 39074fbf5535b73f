import type { ExportLogsServiceRequest, LogRecord } from '@floe/proto';
import { anyValueAsString, anyValueKind, entryCount, serviceName, splitAttributes } from './attributes.ts';
import { MAX_INT64, RESOURCE_ENTRIES_BUDGET, RowCollector, hex, isZero, type ConvertedRows } from './rows.ts';

export const LOG_SHARED_ATTRS_OVER_BUDGET = `log record's resource and scope attributes, once per record, pass the request's ${RESOURCE_ENTRIES_BUDGET} entries; send fewer records per resource or fewer resource attributes`;
import { AcceptedTimes } from './accepted-times.ts';

/**
 * Converts an OTLP logs export into rows of the logs table (@floe/schema logs.ts), grouped by
 * the hour of each record's time. A record's time is its time_unix_nano, or its
 * observed_time_unix_nano when that is 0 (OTLP: 0 means unknown), or the receive time when both
 * are, as Loki's OTLP ingest does. Records with malformed ids or times beyond the int64 range are
 * rejected (OTLP partial success); the rest of the request is stored.
 */

function invalidReason(r: LogRecord): string | undefined {
  if (r.traceId.length !== 0 && r.traceId.length !== 16) return 'log record has an invalid trace_id (must be empty or 16 bytes)';
  if (r.spanId.length !== 0 && r.spanId.length !== 8) return 'log record has an invalid span_id (must be empty or 8 bytes)';
  if (r.timeUnixNano > MAX_INT64 || r.observedTimeUnixNano > MAX_INT64) return 'log record has a time beyond the int64 range of unix nanoseconds';
  return undefined;
}

/** Hex of an id, or null when the record has none (empty or all zeros, which OTLP calls invalid). */
const idHex = (b: Uint8Array): string | null => (b.length === 0 || isZero(b) ? null : hex(b));

export function logsToRows(req: ExportLogsServiceRequest, receivedNs: bigint = BigInt(Date.now()) * 1_000_000n, times: AcceptedTimes = AcceptedTimes.ANY): ConvertedRows {
  const out = new RowCollector({ times });
  let entriesLeft = RESOURCE_ENTRIES_BUDGET;
  for (const rl of req.resourceLogs) {
    const resourceAttrs = rl.resource?.attributes ?? [];
    const res = splitAttributes(resourceAttrs);
    const service = serviceName(resourceAttrs);
    for (const sl of rl.scopeLogs) {
      const scope = splitAttributes(sl.scope?.attributes ?? []);
      // Each row holds its resource's and scope's maps: copied per record by the flush.
      const entries = entryCount(res) + entryCount(scope);
      const scopeName = sl.scope?.name ?? '';
      const scopeVersion = sl.scope?.version ?? '';
      for (const r of sl.logRecords) {
        const reason = invalidReason(r);
        if (reason) {
          out.reject(reason);
          continue;
        }
        const time = r.timeUnixNano > 0n ? r.timeUnixNano : r.observedTimeUnixNano > 0n ? r.observedTimeUnixNano : receivedNs;
        if (!out.admits(time, 'log record time')) continue;
        if (entries > entriesLeft) {
          out.reject(LOG_SHARED_ATTRS_OVER_BUDGET);
          continue;
        }
        entriesLeft -= entries;
        const attrs = splitAttributes(r.attributes);
        out.add(time, {
          time_unix_nano: time.toString(),
          observed_time_unix_nano: r.observedTimeUnixNano > 0n ? r.observedTimeUnixNano.toString() : null,
          service_name: service,
          severity_text: r.severityText,
          severity_number: r.severityNumber,
          body: anyValueAsString(r.body),
          body_type: anyValueKind(r.body),
          trace_id: idHex(r.traceId),
          span_id: idHex(r.spanId),
          flags: r.flags,
          event_name: r.eventName,
          scope_name: scopeName,
          scope_version: scopeVersion,
          dropped_attributes_count: r.droppedAttributesCount,
          log_attr_str: attrs.str,
          log_attr_int: attrs.int,
          log_attr_double: attrs.double,
          log_attr_bool: attrs.bool,
          resource_attr_str: res.str,
          resource_attr_int: res.int,
          resource_attr_double: res.double,
          resource_attr_bool: res.bool,
          scope_attr_str: scope.str,
          scope_attr_int: scope.int,
          scope_attr_double: scope.double,
          scope_attr_bool: scope.bool,
        });
      }
    }
  }
  return out.result();
}
