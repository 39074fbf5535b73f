/**
 * OTLP/protobuf logs export → the logs table's rows as column batches (one WAL record payload per
 * hour, @floe/storage column-batch.ts), straight from the wire bytes.
 *
 * Why hand-written: the general path (`logsToRows(fromBinary(ExportLogsServiceRequestSchema,
 * bytes))`, then ColumnBatchBuilder.addRow per row) builds protobuf-es's object graph of the
 * request (a message per record, key-value and value, a bigint per time, a Uint8Array per id) and
 * a row object per record (decimal and hex strings, twelve plain objects for the attribute maps),
 * only to take them apart again into Parquet leaves: about 25 µs of acceptor CPU per record under
 * load, mostly that and its garbage. This module walks the bytes once, like traces-wire.ts, with
 * the wire reading, the common messages and the attribute maps of otlp-wire.ts: strings are
 * copies of their validated UTF-8, ids hex of the wire bytes, times 32-bit halves, and the columns
 * constant per scope (service, scope name and version, resource and scope maps) are written once
 * per run of records, then copied. OTLP/JSON bodies keep the general path.
 *
 * Contract: for every input, `logsToPayloadsFromWire(bytes, receivedNs)` either returns exactly
 * what the general path gives with the same receive time (the same hours in the same order, each
 * hour's payload byte for byte what `ColumnBatchBuilder.forTable(logsTable)`, addRow() of each of
 * that hour's rows and finish() give, the same counts and first reject reason) or throws an Error:
 * wherever protobuf-es's fromBinary throws, and on the few inputs protobuf-es accepts although they
 * are not valid protobuf with one of STRICTER_THAN_PROTOBUF_ES (otlp-wire.ts). logs-wire.test.ts
 * checks this differentially, including on thousands of corrupted bodies.
 *
 * The body (attributes.ts anyValueAsString and anyValueKind) is rendered from the wire: strings
 * verbatim, scalars as their text, bytes as base64, arrays and kvlists as plain JSON; a body whose
 * protobuf-es value is a merge of several parts (the body field repeated, a oneof field twice in
 * one value, a key-value with two values), which no exporter sends, is rendered from protobuf-es's
 * decoding of its record instead, so that merging is exactly protobuf-es's.
 *
 * The row layout is written out by hand below (writeRow, putBody) and in otlp-wire.ts (putEntry,
 * putPlainJson): a change to logs-to-rows.ts, attributes.ts or the logs table must be mirrored
 * here; logs-wire.test.ts fails until it is (and loading this module fails when the table's raw
 * columns are not exactly the ones writeRow fills).
 */
import { LogRecordSchema, fromBinary } from '@floe/proto';
import { logsTable } from '@floe/schema';
import { ColumnBatchBuilder, type Leaf } from '@floe/storage';
import { anyValueAsString } from './attributes.ts';
import { AcceptedTimes } from './accepted-times.ts';
import { LOG_SHARED_ATTRS_OVER_BUDGET } from './logs-to-rows.ts';
import { RESOURCE_ENTRIES_BUDGET } from './rows.ts';
import {
  HourBatches,
  Out,
  VALUE,
  resourceMaps,
  scopeMaps,
  wire,
  type ConvertedPayloads,
  type MapLeaves,
  type SignalReader,
  type ValueSlot,
} from './otlp-wire.ts';

const {
  allZero,
  anyValueInto,
  ascii,
  at,
  attribute,
  beginRequest,
  bindColumns,
  bytes,
  clearEntries,
  emitMaps,
  endRequest,
  fixed32,
  fixed64,
  fixed64Hi,
  hourOf,
  lenDelim,
  next,
  putBase64,
  putConstValue,
  putI64,
  putMapsRun,
  putPlainJson,
  putScopeRun,
  putServiceRun,
  readRequest,
  seek,
  shrink,
  skip,
  str,
  u32,
} = wire;

// ---------------------------------------------------------------------------------------------
// Output: one column batch per hour

/** One hour's column batch and its leaves (maps indexed by M_STR, M_INT, M_DBL, M_BOOL). */
interface LogRows {
  batch: ColumnBatchBuilder;
  run: number;
  time: Leaf;
  observed: Leaf;
  service: Leaf;
  severityText: Leaf;
  severityNumber: Leaf;
  body: Leaf;
  bodyType: Leaf;
  traceId: Leaf;
  spanId: Leaf;
  flags: Leaf;
  eventName: Leaf;
  scopeName: Leaf;
  scopeVersion: Leaf;
  dropped: Leaf;
  logAttrs: MapLeaves[];
  resourceAttrs: MapLeaves[];
  scopeAttrs: MapLeaves[];
}

/** A column batch of the logs table; throws unless its raw columns are exactly those writeRow fills. */
function newLogRows(): LogRows {
  const batch = ColumnBatchBuilder.forTable(logsTable);
  const c = bindColumns(batch, 'logs-wire.ts', 'logs');
  const rows: LogRows = {
    batch,
    run: 0,
    time: c.prim('time_unix_nano', 'long'),
    observed: c.prim('observed_time_unix_nano', 'long'),
    service: c.prim('service_name', 'string'),
    severityText: c.prim('severity_text', 'string'),
    severityNumber: c.prim('severity_number', 'int'),
    body: c.prim('body', 'string'),
    bodyType: c.prim('body_type', 'string'),
    traceId: c.prim('trace_id', 'string'),
    spanId: c.prim('span_id', 'string'),
    flags: c.prim('flags', 'long'),
    eventName: c.prim('event_name', 'string'),
    scopeName: c.prim('scope_name', 'string'),
    scopeVersion: c.prim('scope_version', 'string'),
    dropped: c.prim('dropped_attributes_count', 'long'),
    logAttrs: c.maps('log_attr'),
    resourceAttrs: c.maps('resource_attr'),
    scopeAttrs: c.maps('scope_attr'),
  };
  c.done();
  return rows;
}

const batches = new HourBatches(newLogRows);

// ---------------------------------------------------------------------------------------------
// LogRecord

// logs-to-rows.ts invalidReason()
const R_TRACE_ID = 'log record has an invalid trace_id (must be empty or 16 bytes)';
const R_SPAN_ID = 'log record has an invalid span_id (must be empty or 8 bytes)';
const R_TIME = 'log record has a time beyond the int64 range of unix nanoseconds';
/** Resource and scope map entries the rest of the request may store, once per record (RESOURCE_ENTRIES_BUDGET). */
let entriesLeft = 0;

/** anyValueKind() by V_* case (a string index has no kind of its own there). */
const BODY_TYPES = ['empty', 'string', 'bool', 'int', 'double', 'array', 'kvlist', 'bytes', 'empty'].map(ascii);
const C_TRUE = ascii('true');
const C_FALSE = ascii('false');
const C_NULL = ascii('null');
const C_EMPTY = ascii('');

/** The request (beginRequest()), to copy values from. */
const EMPTY = new Uint8Array(0);
let buf: Uint8Array = EMPTY;
/** The body's text when it is not a copy of the request (numbers, base64, plain JSON). */
const text = new Out(4096);
/** The receive time (unsigned 32-bit halves): a record's time when it has neither time. */
let recvLo = 0;
let recvHi = 0;

// The record being converted (module state, so that writeRow() is a function of its own).
let tLo = 0;
let tHi = 0;
let oLo = 0;
let oHi = 0;
let sevNum = 0;
let sevS = 0;
let sevE = 0;
let trS = 0;
let trE = 0;
let spS = 0;
let spE = 0;
let flags = 0;
let evS = 0;
let evE = 0;
let dropped = 0;
/** The body: its merged value, how many times the field occurred, the first occurrence's range. */
const body: ValueSlot = { kind: VALUE.NONE, s: 0, e: 0, lo: 0, hi: 0, num: 0 };
let bodyN = 0;
let bodyS = 0;
let bodyE = 0;

/** LogRecord (depth 4) → one row of its hour's batch, or a rejection. */
function logRecord(end: number): void {
  const start = at();
  tLo = tHi = oLo = oHi = sevNum = sevS = sevE = trS = trE = spS = spE = flags = evS = evE = dropped = 0;
  body.kind = VALUE.NONE;
  bodyN = 0;
  clearEntries();
  for (let t: number; (t = next(end)) !== 0; ) {
    switch (t) {
      case 0x09:
        tLo = fixed64(end);
        tHi = fixed64Hi();
        break;
      case 0x10:
        sevNum = u32(end) | 0;
        break;
      case 0x1a:
        sevS = str(end);
        sevE = at();
        break;
      case 0x2a: {
        const e = lenDelim(end);
        if (bodyN++ === 0) {
          bodyS = at();
          bodyE = e;
        }
        anyValueInto(e, 5, body);
        break;
      }
      case 0x32:
        attribute(end, 5);
        break;
      case 0x38:
        dropped = u32(end);
        break;
      case 0x45:
        flags = fixed32(end);
        break;
      case 0x4a:
        trS = bytes(end);
        trE = at();
        break;
      case 0x52:
        spS = bytes(end);
        spE = at();
        break;
      case 0x59:
        oLo = fixed64(end);
        oHi = fixed64Hi();
        break;
      case 0x62:
        evS = str(end);
        evE = at();
        break;
      default:
        skip(t, end, 0x1fee); // fields 1–12 but 4 (reserved)
    }
  }

  const tr = trE - trS;
  const sp = spE - spS;
  const reason =
    tr !== 0 && tr !== 16 ? R_TRACE_ID : sp !== 0 && sp !== 8 ? R_SPAN_ID : tHi >= 0x80000000 || oHi >= 0x80000000 ? R_TIME : undefined;
  if (reason !== undefined) {
    batches.reject(reason);
    return;
  }
  // OTLP: 0 means unknown; then the observed time, then the receive time
  let lo = tLo;
  let hi = tHi;
  if ((lo | hi) === 0) {
    lo = oLo;
    hi = oHi;
    if ((lo | hi) === 0) {
      lo = recvLo;
      hi = recvHi;
    }
  }
  if (!batches.admits(lo, hi, 'log record time')) return;
  let entries = 0;
  for (let i = 0; i < 4; i++) entries += resourceMaps[i]!.key.n + scopeMaps[i]!.key.n;
  if (entries > entriesLeft) {
    batches.reject(LOG_SHARED_ATTRS_OVER_BUDGET);
    return;
  }
  entriesLeft -= entries;
  writeRow(batches.get(hourOf(lo, hi)), lo, hi, start, end);
  seek(end); // past what rendering the body read
}

/** An id as idHex() gives it: hex, or NULL when empty or all zeros. */
function putId(leaf: Leaf, s: number, e: number): void {
  if (e > s && !allZero(s, e)) leaf.hex(buf, s, e);
  else leaf.nil(0);
}

/** The row of the current record (time lo, hi; the record is [start, end)): what addRow() makes of logsToRows' row object. */
function writeRow(h: LogRows, lo: number, hi: number, start: number, end: number): void {
  h.time.i64(lo, hi);
  if ((oLo | oHi) !== 0) h.observed.i64(oLo, oHi);
  else h.observed.nil(0);
  h.severityText.utf8(buf, sevS, sevE, 0);
  h.severityNumber.i32(sevNum);
  putBody(h, start, end);
  putId(h.traceId, trS, trE);
  putId(h.spanId, spS, spE);
  h.flags.long(flags);
  h.eventName.utf8(buf, evS, evE, 0);
  h.dropped.long(dropped);
  emitMaps(h.logAttrs);
  batches.endRow(h);
}

/** body and body_type: anyValueAsString() and anyValueKind() of the record's body. */
function putBody(h: LogRows, start: number, end: number): void {
  const k = body.kind;
  putConstValue(h.bodyType, BODY_TYPES[k]!);
  const leaf = h.body;
  switch (k) {
    case VALUE.STR:
      leaf.utf8(buf, body.s, body.e, 0);
      return;
    case VALUE.BOOL:
      putConstValue(leaf, body.num !== 0 ? C_TRUE : C_FALSE);
      return;
    case VALUE.INT:
      text.p = 0;
      putI64(text, body.lo, body.hi);
      leaf.utf8(text.b, 0, text.p, 0);
      return;
    case VALUE.DBL:
      leaf.string(String(body.num)); // NaN and ±Infinity as String() writes them, not quoted
      return;
    case VALUE.BYTES:
      text.p = 0;
      putBase64(text, body.s, body.e);
      leaf.utf8(text.b, 0, text.p, 0);
      return;
    case VALUE.ARR:
    case VALUE.KVL:
      text.p = 0;
      if (bodyN === 1 && putPlainJson(text, bodyS, bodyE)) leaf.utf8(text.b, 0, text.p, 0);
      else leaf.string(anyValueAsString(fromBinary(LogRecordSchema, buf.subarray(start, end)).body));
      return;
    case VALUE.SIDX:
      putConstValue(leaf, C_NULL); // plainJson() of a value it has no case for
      return;
    default:
      putConstValue(leaf, C_EMPTY);
  }
}

/** The columns that are the same for every record of a scope group, for its runs of rows (HourBatches). */
function endScope(): void {
  for (const h of batches.pending) {
    const count = h.run;
    h.run = 0;
    putServiceRun(h.service, count);
    putScopeRun(h.scopeName, h.scopeVersion, count);
    putMapsRun(h.resourceAttrs, resourceMaps, count);
    putMapsRun(h.scopeAttrs, scopeMaps, count);
  }
  batches.pending.length = 0;
}

const LOGS: SignalReader = { item: logRecord, endScope, keepScopeAttrs: true };

/**
 * Converts an ExportLogsServiceRequest in protobuf wire format into one column batch of the logs
 * table per hour, exactly as Ingest makes them of
 * `logsToRows(fromBinary(ExportLogsServiceRequestSchema, bytes), receivedNs)`. Throws an Error on
 * malformed input (see the header for the cases stricter than protobuf-es).
 */
export function logsToPayloadsFromWire(bytes: Uint8Array, receivedNs: bigint = BigInt(Date.now()) * 1_000_000n, times: AcceptedTimes = AcceptedTimes.ANY): ConvertedPayloads {
  recvLo = Number(receivedNs & 0xffffffffn);
  recvHi = Number((receivedNs >> 32n) & 0xffffffffn);
  try {
    batches.times = times;
    entriesLeft = RESOURCE_ENTRIES_BUDGET;
    buf = beginRequest(bytes);
    readRequest(LOGS);
    return batches.result();
  } finally {
    buf = EMPTY;
    endRequest();
    batches.reset();
    shrink(text, 4096);
  }
}
