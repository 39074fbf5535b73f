/**
 * OTLP/protobuf trace export → the traces table's rows as column batches (one WAL record payload
 * per hour, @floe/storage column-batch.ts), straight from the wire bytes.
 *
 * Why hand-written: the general path (`spansToRows(fromBinary(ExportTraceServiceRequestSchema,
 * bytes))`, then ColumnBatchBuilder.addRow per row) builds protobuf-es's object graph of the
 * request (a message per span, key-value and value, a bigint per timestamp, a Uint8Array per id)
 * and a row object per span (hex and decimal strings, a plain object per attribute map), only to
 * take them apart again into Parquet leaves; under load that and its garbage dominated the
 * acceptor's CPU profile, and no well-kept library transcodes OTLP wire bytes into rows. This
 * module walks the bytes once and writes values into the leaves of one reused ColumnBatchBuilder
 * per hour: ids as hex of the wire bytes, strings as copies of their validated UTF-8, times as
 * 32-bit halves, the columns constant per scope (service, scope, resource maps) once per run of
 * spans, then copied. OTLP/JSON bodies keep the general path (decodeOtlpJson, then spansToRows).
 * The wire reading, the common messages and the attribute maps are otlp-wire.ts, shared with
 * the logs transcoder.
 *
 * Contract: for every input, `spansToPayloadsFromWire(bytes)` either returns exactly what the
 * general path gives (the same hours in the same order, each hour's payload byte for byte what
 * `ColumnBatchBuilder.forTable(tracesTable)`, addRow() of each of that hour's rows and finish()
 * give, the same counts and first reject reason) or throws an Error. It throws on everything
 * protobuf-es throws on: truncated varints and fields, lengths beyond the buffer, varints over 10
 * bytes in known fields, illegal tags, wire types 6/7, invalid UTF-8 in any string field (proto3
 * strings are validated: fromBinary throws on them too, it does not substitute U+FFFD), recursion
 * deeper than 100 messages. It also throws on a few inputs that protobuf-es accepts although they
 * are not valid protobuf, with one of the messages in STRICTER_THAN_PROTOBUF_ES (otlp-wire.ts
 * lists them). The first error in wire order is the one reported, as protobuf-es would meet it;
 * the tests check all of this differentially, including on thousands of corrupted bodies.
 *
 * Protobuf rules (otlp-wire.ts): fields in any order, unknown fields skipped, scalars
 * last-one-wins, singular messages merged (here also a span's status), the resource and the
 * scope applied to their spans wherever they appear. The only repeated scalar fields here are
 * strings (EntityRef keys), never packed. Array and key-value-list attribute values of events
 * and links are rendered by protobuf-es (decoding just that key-value), exactly as
 * toJson(KeyValueSchema) does.
 *
 * The row layout is written out by hand below (writeRow, event, link) and in otlp-wire.ts
 * (putEntry): a change to traces-to-rows.ts, attributes.ts or the traces table must be mirrored
 * here; traces-wire.test.ts fails until it is (and loading this module fails when the table's raw
 * columns are not exactly the ones writeRow fills).
 */
import { tracesTable } from '@floe/schema';
import { ColumnBatchBuilder, type Leaf } from '@floe/storage';
import { AcceptedTimes } from './accepted-times.ts';
import {
  HourBatches,
  Out,
  resourceMaps,
  tmp,
  wire,
  type ConvertedPayloads,
  type MapLeaves,
  type SignalReader,
} from './otlp-wire.ts';
import { SPAN_JSON_BUDGET, SPAN_JSON_OVER_BUDGET, SPAN_RESOURCE_OVER_BUDGET, SPAN_TIME_RANGE } from './traces-to-rows.ts';
import { RESOURCE_ENTRIES_BUDGET } from './rows.ts';

const {
  attribute,
  allZero,
  ascii,
  at,
  beginRequest,
  bindColumns,
  bytes,
  clearEntries,
  emitMaps,
  endRequest,
  failInWireOrder,
  fixed32,
  fixed64,
  fixed64Hi,
  hourOf,
  keyValue,
  lenDelim,
  next,
  putByte,
  putConst,
  putConstValue,
  putHex,
  putKeyValueJson,
  putMapsRun,
  putScopeRun,
  putServiceRun,
  putStr,
  putU64,
  putUint,
  readRequest,
  seek,
  shrink,
  skip,
  skipBytes,
  skipValue,
  str,
  u32,
} = wire;

export { STRICTER_THAN_PROTOBUF_ES, type ConvertedPayloads } from './otlp-wire.ts';

// ---------------------------------------------------------------------------------------------
// Output: one column batch per hour

/** One hour's column batch and its leaves (maps indexed by M_STR, M_INT, M_DBL, M_BOOL). */
interface SpanRows {
  batch: ColumnBatchBuilder;
  run: number;
  traceId: Leaf;
  spanId: Leaf;
  parentSpanId: Leaf;
  traceState: Leaf;
  name: Leaf;
  kind: Leaf;
  start: Leaf;
  end: Leaf;
  duration: Leaf;
  statusCode: Leaf;
  statusMessage: Leaf;
  service: Leaf;
  scopeName: Leaf;
  scopeVersion: Leaf;
  flags: Leaf;
  spanAttrs: MapLeaves[];
  resourceAttrs: MapLeaves[];
  events: Leaf;
  links: Leaf;
  dropped: Leaf;
}

/** A column batch of the traces table; throws unless its raw columns are exactly those writeRow fills. */
function newSpanRows(): SpanRows {
  const batch = ColumnBatchBuilder.forTable(tracesTable);
  const c = bindColumns(batch, 'traces-wire.ts', 'traces');
  const rows: SpanRows = {
    batch,
    run: 0,
    traceId: c.prim('trace_id', 'string'),
    spanId: c.prim('span_id', 'string'),
    parentSpanId: c.prim('parent_span_id', 'string'),
    traceState: c.prim('trace_state', 'string'),
    name: c.prim('name', 'string'),
    kind: c.prim('kind', 'string'),
    start: c.prim('start_time_unix_nano', 'long'),
    end: c.prim('end_time_unix_nano', 'long'),
    duration: c.prim('duration_nano', 'long'),
    statusCode: c.prim('status_code', 'string'),
    statusMessage: c.prim('status_message', 'string'),
    service: c.prim('service_name', 'string'),
    scopeName: c.prim('scope_name', 'string'),
    scopeVersion: c.prim('scope_version', 'string'),
    flags: c.prim('flags', 'long'),
    spanAttrs: c.maps('span_attr'),
    resourceAttrs: c.maps('resource_attr'),
    events: c.prim('events_json', 'string'),
    links: c.prim('links_json', 'string'),
    dropped: c.prim('dropped_counts', 'string'),
  };
  c.done();
  return rows;
}

const batches = new HourBatches(newSpanRows);

// ---------------------------------------------------------------------------------------------
// Messages

/** The request (beginRequest()), to copy values from. */
const EMPTY = new Uint8Array(0);
let buf: Uint8Array = EMPTY;
const ev = new Out(4096); // events_json of the current span
const lk = new Out(4096); // links_json of the current span
let evN = 0;
let lkN = 0;
/** Bytes of events_json and links_json the rest of the request may still store (SPAN_JSON_BUDGET). */
let jsonLeft = 0;
/** Resource map entries the rest of the request may store (RESOURCE_ENTRIES_BUDGET). */
let entriesLeft = 0;
/** The current span's events and links passed jsonLeft: the rest of them are only validated. */
let overBudget = false;

function checkBudget(): void {
  if (ev.p + lk.p > jsonLeft) overBudget = true;
}

const C_EV_OPEN = ascii('{"timeUnixNano":"');
const C_EV_NAME = ascii('","name":');
const C_ATTRS = ascii(',"attributes":[');
const C_EV_DROPPED = ascii('],"droppedAttributesCount":');
const C_LK_OPEN = ascii('{"traceId":"');
const C_LK_SPAN = ascii('","spanId":"');
const C_LK_STATE = ascii('","traceState":');
const C_LK_FLAGS = ascii('],"flags":');
const C_CLOSE_ARR_OBJ = ascii(']}');

/** Span.Event (depth 5) → one element of events_json. */
function event(end: number): void {
  const start = at();
  let tLo = 0;
  let tHi = 0;
  let nS = 0;
  let nE = 0;
  let dropped = 0;
  try {
    for (let t: number; (t = next(end)) !== 0; ) {
      switch (t) {
        case 0x09:
          tLo = fixed64(end);
          tHi = fixed64Hi();
          break;
        case 0x12:
          nS = str(end);
          nE = at();
          break;
        case 0x1a:
          skipBytes(end); // attributes: second pass
          break;
        case 0x20:
          dropped = u32(end);
          break;
        default:
          skip(t, end, 0b11110);
      }
    }
  } catch (err) {
    failInWireOrder(err, start, end, 0x1a, eventAttr);
  }
  if (overBudget) {
    validateAttrs(start, end, 0x1a);
    return;
  }
  const w = ev;
  putByte(w, evN++ === 0 ? 0x5b : 0x2c);
  putConst(w, C_EV_OPEN);
  putU64(w, tLo, tHi);
  putConst(w, C_EV_NAME);
  putStr(w, nS, nE);
  putConst(w, C_ATTRS);
  seek(start);
  let n = 0;
  for (let t: number; (t = next(end)) !== 0; ) {
    if (t === 0x1a) {
      const e = lenDelim(end);
      if (n++ > 0) putByte(w, 0x2c);
      eventAttr(e);
    } else skipValue(t & 7, end);
  }
  if (dropped !== 0) {
    putConst(w, C_EV_DROPPED);
    putUint(w, dropped);
    putByte(w, 0x7d);
  } else putConst(w, C_CLOSE_ARR_OBJ);
  checkBudget();
}

/** The attributes (field `tag`) of an event or link past the budget: checked as the written ones are, not rendered. */
function validateAttrs(start: number, end: number, tag: number): void {
  seek(start);
  for (let t: number; (t = next(end)) !== 0; ) {
    if (t === tag) keyValue(lenDelim(end), 6);
    else skipValue(t & 7, end);
  }
}

function eventAttr(end: number): void {
  const s = at();
  keyValue(end, 6);
  putKeyValueJson(ev, s, end);
}

function linkAttr(end: number): void {
  const s = at();
  keyValue(end, 6);
  putKeyValueJson(lk, s, end);
}

/** Span.Link (depth 5) → one element of links_json. */
function link(end: number): void {
  const start = at();
  let trS = 0;
  let trE = 0;
  let spS = 0;
  let spE = 0;
  let tsS = 0;
  let tsE = 0;
  let flags = 0;
  try {
    for (let t: number; (t = next(end)) !== 0; ) {
      switch (t) {
        case 0x0a:
          trS = bytes(end);
          trE = at();
          break;
        case 0x12:
          spS = bytes(end);
          spE = at();
          break;
        case 0x1a:
          tsS = str(end);
          tsE = at();
          break;
        case 0x22:
          skipBytes(end); // attributes: second pass
          break;
        case 0x28:
          u32(end); // dropped_attributes_count: not kept
          break;
        case 0x35:
          flags = fixed32(end);
          break;
        default:
          skip(t, end, 0b1111110);
      }
    }
  } catch (err) {
    failInWireOrder(err, start, end, 0x22, linkAttr);
  }
  if (overBudget) {
    validateAttrs(start, end, 0x22);
    return;
  }
  const w = lk;
  putByte(w, lkN++ === 0 ? 0x5b : 0x2c);
  putConst(w, C_LK_OPEN);
  putHex(w, trS, trE);
  putConst(w, C_LK_SPAN);
  putHex(w, spS, spE);
  putConst(w, C_LK_STATE);
  putStr(w, tsS, tsE);
  putConst(w, C_ATTRS);
  seek(start);
  let n = 0;
  for (let t: number; (t = next(end)) !== 0; ) {
    if (t === 0x22) {
      const e = lenDelim(end);
      if (n++ > 0) putByte(w, 0x2c);
      linkAttr(e);
    } else skipValue(t & 7, end);
  }
  if (flags !== 0) {
    putConst(w, C_LK_FLAGS);
    putUint(w, flags);
    putByte(w, 0x7d);
  } else putConst(w, C_CLOSE_ARR_OBJ);
  checkBudget();
}

// Span.status, merged over occurrences
let stMsgS = 0;
let stMsgE = 0;
let stCode = 0;

function status(end: number): void {
  for (let t: number; (t = next(end)) !== 0; ) {
    switch (t) {
      case 0x12:
        stMsgS = str(end);
        stMsgE = at();
        break;
      case 0x18:
        stCode = u32(end) | 0;
        break;
      default:
        skip(t, end, 0b1100);
    }
  }
}

const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'].map(ascii);
const STATUS = ['unset', 'ok', 'error'].map(ascii);
const C_DROPPED_A = ascii('{"attributes":');
const C_DROPPED_E = ascii(',"events":');
const C_DROPPED_L = ascii(',"links":');

const R_TRACE_ID = 'span has an invalid trace_id (must be 16 non-zero bytes)';
const R_SPAN_ID = 'span has an invalid span_id (must be 8 non-zero bytes)';
const R_PARENT = 'span has an invalid parent_span_id (must be empty or 8 bytes)';
const R_START = 'span has no start_time_unix_nano';
const R_RANGE = SPAN_TIME_RANGE;

// The span being converted (module state, so that writeRow() is a function of its own).
let trS = 0;
let trE = 0;
let spS = 0;
let spE = 0;
let paS = 0;
let paE = 0;
let tsS = 0;
let tsE = 0;
let nmS = 0;
let nmE = 0;
let kind = 0;
let stLo = 0;
let stHi = 0;
let enLo = 0;
let enHi = 0;
let dAttrs = 0;
let dEvents = 0;
let dLinks = 0;
let flags = 0;

/** Span (depth 4) → one row of its hour's batch, or a rejection. */
function span(end: number): void {
  trS = trE = spS = spE = paS = paE = tsS = tsE = nmS = nmE = 0;
  kind = stLo = stHi = enLo = enHi = dAttrs = dEvents = dLinks = flags = 0;
  stMsgS = stMsgE = 0;
  stCode = 0;
  clearEntries();
  ev.p = 0;
  evN = 0;
  lk.p = 0;
  lkN = 0;
  overBudget = false;
  for (let t: number; (t = next(end)) !== 0; ) {
    switch (t) {
      case 0x0a:
        trS = bytes(end);
        trE = at();
        break;
      case 0x12:
        spS = bytes(end);
        spE = at();
        break;
      case 0x1a:
        tsS = str(end);
        tsE = at();
        break;
      case 0x22:
        paS = bytes(end);
        paE = at();
        break;
      case 0x2a:
        nmS = str(end);
        nmE = at();
        break;
      case 0x30:
        kind = u32(end) | 0;
        break;
      case 0x39:
        stLo = fixed64(end);
        stHi = fixed64Hi();
        break;
      case 0x41:
        enLo = fixed64(end);
        enHi = fixed64Hi();
        break;
      case 0x4a:
        attribute(end, 5);
        break;
      case 0x50:
        dAttrs = u32(end);
        break;
      case 0x5a: {
        const e = lenDelim(end);
        event(e);
        break;
      }
      case 0x60:
        dEvents = u32(end);
        break;
      case 0x6a: {
        const e = lenDelim(end);
        link(e);
        break;
      }
      case 0x70:
        dLinks = u32(end);
        break;
      case 0x7a: {
        const e = lenDelim(end);
        status(e);
        break;
      }
      case 0x85: // field 16, fixed32
        flags = fixed32(end);
        break;
      default:
        skip(t, end, 0x1fffe);
    }
  }

  const reason =
    trE - trS !== 16 || allZero(trS, trE)
      ? R_TRACE_ID
      : spE - spS !== 8 || allZero(spS, spE)
        ? R_SPAN_ID
        : paE - paS !== 0 && paE - paS !== 8
          ? R_PARENT
          : stLo === 0 && stHi === 0
            ? R_START
            : stHi >= 0x80000000 || enHi >= 0x80000000
              ? R_RANGE
              : undefined;
  if (reason !== undefined) {
    batches.reject(reason);
    return;
  }
  if (!batches.admits(stLo, stHi, 'span start time')) return;
  // As stored: each list closed by its ']'.
  const json = (evN > 0 ? ev.p + 1 : 0) + (lkN > 0 ? lk.p + 1 : 0);
  // The resource's map entries as each row holds them (an empty map is one level too).
  const entries = resourceMaps[0]!.key.n + resourceMaps[1]!.key.n + resourceMaps[2]!.key.n + resourceMaps[3]!.key.n;
  const over = entries > entriesLeft ? SPAN_RESOURCE_OVER_BUDGET : overBudget || json > jsonLeft ? SPAN_JSON_OVER_BUDGET : undefined;
  if (over !== undefined) {
    batches.reject(over);
    return;
  }
  jsonLeft -= json;
  entriesLeft -= entries;
  if (!(enHi > stHi || (enHi === stHi && enLo >= stLo))) {
    enLo = stLo;
    enHi = stHi;
  }
  writeRow(batches.get(hourOf(stLo, stHi)));
}

/** The row of the current span: what addRow() makes of spansToRows' row object. */
function writeRow(h: SpanRows): void {
  let duLo = enLo - stLo;
  let duHi = enHi - stHi;
  if (duLo < 0) {
    duLo += 4294967296;
    duHi--;
  }
  h.traceId.hex(buf, trS, trE);
  h.spanId.hex(buf, spS, spE);
  h.parentSpanId.hex(buf, paS, paE);
  h.traceState.utf8(buf, tsS, tsE, 0);
  h.name.utf8(buf, nmS, nmE, 0);
  putConstValue(h.kind, KINDS[kind] ?? KINDS[0]!);
  h.start.i64(stLo, stHi);
  h.end.i64(enLo, enHi);
  h.duration.i64(duLo, duHi);
  putConstValue(h.statusCode, STATUS[stCode] ?? STATUS[0]!);
  h.statusMessage.utf8(buf, stMsgS, stMsgE, 0);
  h.flags.long(flags);
  emitMaps(h.spanAttrs);
  if (evN > 0) {
    putByte(ev, 0x5d);
    h.events.utf8(ev.b, 0, ev.p, 0);
  } else h.events.nil(0);
  if (lkN > 0) {
    putByte(lk, 0x5d);
    h.links.utf8(lk.b, 0, lk.p, 0);
  } else h.links.nil(0);
  if (dAttrs !== 0 || dEvents !== 0 || dLinks !== 0) {
    const w = tmp;
    w.p = 0;
    putConst(w, C_DROPPED_A);
    putUint(w, dAttrs);
    putConst(w, C_DROPPED_E);
    putUint(w, dEvents);
    putConst(w, C_DROPPED_L);
    putUint(w, dLinks);
    putByte(w, 0x7d);
    h.dropped.utf8(w.b, 0, w.p, 0);
  } else h.dropped.nil(0);
  batches.endRow(h);
}

/** The columns that are the same for every span of a scope group, for its runs of rows (HourBatches). */
function endScope(): void {
  for (const h of batches.pending) {
    const count = h.run;
    h.run = 0;
    putServiceRun(h.service, count);
    putScopeRun(h.scopeName, h.scopeVersion, count);
    putMapsRun(h.resourceAttrs, resourceMaps, count);
  }
  batches.pending.length = 0;
}

const TRACES: SignalReader = { item: span, endScope, keepScopeAttrs: false };

/**
 * Converts an ExportTraceServiceRequest in protobuf wire format into one column batch of the
 * traces table per hour, exactly as Ingest makes them of
 * `spansToRows(fromBinary(ExportTraceServiceRequestSchema, bytes))`. Throws an Error on malformed
 * input (see the header for the cases stricter than protobuf-es).
 */
export function spansToPayloadsFromWire(bytes: Uint8Array, times: AcceptedTimes = AcceptedTimes.ANY): ConvertedPayloads {
  try {
    batches.times = times;
    jsonLeft = SPAN_JSON_BUDGET;
    entriesLeft = RESOURCE_ENTRIES_BUDGET;
    buf = beginRequest(bytes);
    readRequest(TRACES);
    return batches.result();
  } finally {
    buf = EMPTY;
    endRequest();
    batches.reset();
    shrink(ev, 4096);
    shrink(lk, 4096);
  }
}

/**
 * The spans of a request (already converted, so well-formed) with their attributes, events and
 * links, and its resources' and scopes' attributes: about the messages fromBinary makes of it,
 * each some hundred bytes however few it weighs on the wire (an empty event is two bytes).
 */
export function spanPartsOf(bytes: Uint8Array): number {
  let n = 0;
  try {
    const len = beginRequest(bytes).length;
    for (let t: number; (t = next(len)) !== 0; ) {
      if (t !== 0x0a) {
        skipValue(t & 7, len);
        continue;
      }
      const rsEnd = lenDelim(len);
      for (let r: number; (r = next(rsEnd)) !== 0; ) {
        if (r === 0x0a) n += fieldsOf(lenDelim(rsEnd), 0x0a, 0x0a);
        else if (r === 0x12) {
          const ssEnd = lenDelim(rsEnd);
          for (let s: number; (s = next(ssEnd)) !== 0; ) {
            if (s === 0x12) n += 1 + fieldsOf(lenDelim(ssEnd), 0x4a, 0x5a, 0x6a);
            else if (s === 0x0a) n += fieldsOf(lenDelim(ssEnd), 0x1a, 0x1a);
            else skipValue(s & 7, ssEnd);
          }
        } else skipValue(r & 7, rsEnd);
      }
    }
    return n;
  } finally {
    endRequest();
  }
}

/** Occurrences of the tags a, b and c in the message that ends at `end`. */
function fieldsOf(end: number, a: number, b: number, c = a): number {
  let n = 0;
  for (let t: number; (t = next(end)) !== 0; ) {
    if (t === a || t === b || t === c) n++;
    skipValue(t & 7, end);
  }
  return n;
}
