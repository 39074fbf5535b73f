/**
 * Prometheus remote write 1.0, read straight from the wire for the common request: series of
 * plain float samples and metric metadata. protobuf-es builds a message object per label and per
 * sample, which made decoding most of the CPU a remote-written sample cost (bench/RESULTS.md);
 * this walk yields the few fields the conversion reads and nothing else. protobuf-es has no lazy
 * decoder into caller-chosen shapes, so the walk is written here, over its BinaryReader: the
 * varints, skipping and strict UTF-8 are the reference decoder's, the field dispatch is ours, and
 * so are two allocation-free shortcuts that Reader explains.
 *
 * It covers exactly the fields it needs (prompb.WriteRequest: timeseries = 1, metadata = 3;
 * TimeSeries: labels = 1, samples = 2; Label: name = 1, value = 2; Sample: value = 1 (double),
 * timestamp = 2 (int64); MetricMetadata: type = 1, metric_family_name = 2, help = 4, unit = 5)
 * and skips unknown fields as protobuf does. It returns undefined for anything else it would
 * have to interpret (a series with exemplars or native histograms) and throws a WireDecodeError
 * on bytes it does not take as a valid message (including invalid UTF-8 in a string: proto3
 * strings are validated, and protobuf-es refuses them rather than substituting U+FFFD); inside a
 * series' label fields it throws so only when the labels are read (WireSeries). In both cases the
 * caller decodes with protobuf-es instead, so that path's results and error messages stay the
 * reference.
 */
import { isUtf8 } from 'node:buffer';
import { BinaryReader, WireType } from '@floe/proto';
import { viewOf } from '@floe/storage';

/**
 * A series as read from the wire. Its label fields are only framed (tags and lengths) when the
 * request is read; what is inside them (the Label messages, their UTF-8, the name) is read when
 * `name` or `labels` is first asked for, and throws WireDecodeError then if it is not valid. A
 * series whose converted form is cached under its label bytes needs neither: those bytes were
 * read whole when the entry was made, and decoding every label of every series was a tenth of
 * the remote-write path's main thread (strings, arrays and their garbage).
 */
export class WireSeries {
  readonly samples: Array<{ value: number; timestamp: bigint }>;
  /**
   * The series' label fields as sent (each Label message with its tag): labelData[labelFrom,
   * labelTo), labelView a DataView of labelData. The same bytes always decode to the same labels,
   * so they key a cache of what the labels make without building a key from them.
   */
  readonly labelData: Buffer;
  readonly labelView: DataView;
  readonly labelFrom: number;
  readonly labelTo: number;
  #parsed: ParsedLabels | undefined;
  #labels: Array<readonly [string, string]> | undefined;

  constructor(samples: Array<{ value: number; timestamp: bigint }>, labels: LabelRun) {
    this.samples = samples;
    this.labelData = labels.data;
    this.labelView = labels.view;
    this.labelFrom = labels.from;
    this.labelTo = labels.to;
  }

  /** The value of its `__name__` label ('' without one). Throws WireDecodeError on invalid labels. */
  get name(): string {
    return this.#parse().name;
  }

  /** Throws WireDecodeError on invalid labels. */
  get labels(): Array<readonly [string, string]> {
    if (this.#labels) return this.#labels;
    const { data: d, ranges: g } = this.#parse();
    const out: Array<readonly [string, string]> = [];
    for (let i = 0; i < g.length; i += 4) out.push([d.toString('utf8', g[i]!, g[i + 1]!), d.toString('utf8', g[i + 2]!, g[i + 3]!)]);
    return (this.#labels = out);
  }

  #parse(): ParsedLabels {
    return (this.#parsed ??= wireErrors(() => parseLabels(this.labelData.subarray(this.labelFrom, this.labelTo))));
  }
}

interface ParsedLabels {
  data: Buffer;
  /** Per label: name start, name end, value start, value end in `data`. */
  ranges: number[];
  name: string;
}

/**
 * The Label messages of a series' label fields (framed already by series()): their ranges, each
 * string checked as valid UTF-8, and the metric name.
 */
function parseLabels(bytes: Uint8Array): ParsedLabels {
  const r = new Reader(bytes);
  const ranges: number[] = [];
  let plain = true;
  while (r.pos < r.len) {
    r.fieldTag(); // field 1, length-delimited: series() took only those
    if (!label(r, r.fieldEnd(r.len), ranges)) plain = false;
  }
  // Label messages that are valid UTF-8 as a whole hold valid strings only: each string sits
  // between ASCII bytes (its field tag and one-byte length before it, the next field's tag or
  // the end after it), and no multi-byte character crosses an ASCII byte. A multi-byte length
  // never passes as UTF-8 (its last byte is ASCII after a byte of 0x80 or more), nor does a run
  // cut inside a character. Unknown fields in a Label (label() says) void that reasoning: then,
  // and when the whole fails, each string is checked alone, and invalid text is refused as
  // protobuf-es refuses it.
  if (!plain || !isUtf8(r.data)) {
    for (let i = 0; i < ranges.length; i += 2) {
      if (!isUtf8(r.data.subarray(ranges[i]!, ranges[i + 1]!))) throw new WireDecodeError('invalid UTF-8 in a string field');
    }
  }
  let name = '';
  for (let i = 0; i < ranges.length; i += 4) {
    if (isMetricNameLabel(r.data, ranges[i]!, ranges[i + 1]!)) name = r.data.toString('utf8', ranges[i + 2]!, ranges[i + 3]!);
  }
  return { data: r.data, ranges, name };
}

/** Bytes of a buffer (see WireSeries.labelData). */
interface LabelRun {
  data: Buffer;
  view: DataView;
  from: number;
  to: number;
}

export interface WireMetadata {
  type: number;
  metricFamilyName: string;
  help: string;
  unit: string;
}

export interface WireWriteRequest {
  timeseries: WireSeries[];
  metadata: WireMetadata[];
}

/** Bytes the wire walk refuses; only these may send the caller to protobuf-es. */
export class WireDecodeError extends Error {
  override readonly name = 'WireDecodeError';
}

/**
 * BinaryReader plus two reads made for every label without garbage: tag() returns an array per
 * tag and string() fills an array per short ASCII string. With a request's rows alive meanwhile,
 * that garbage measured about a third more young-generation collections and a slower remote
 * write, the throughput this path exists for. fieldTag() applies tag()'s checks; text() leaves
 * anything but clean text to string(true).
 */
class Reader extends BinaryReader {
  readonly data: Buffer;
  readonly dataView: DataView;

  constructor(bytes: Uint8Array) {
    super(bytes);
    this.data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.dataView = viewOf(this.data);
  }

  /** tag()'s checks (a varint past uint32, field 0, wire types 6 and 7), its answer as one number. */
  fieldTag(): number {
    const start = this.pos;
    const tag = this.uint32();
    const n = this.pos - start;
    if (tag < 8 || (tag & 7) > 5 || (n >= 5 && (n > 5 || this.data[this.pos - 1]! > 0x0f))) {
      throw new WireDecodeError(`illegal tag: field no ${tag >>> 3} wire type ${tag & 7} (${n} bytes)`);
    }
    return tag;
  }

  /**
   * A string field, decoded by Buffer in one call. Node's decoder replaces each invalid sequence
   * with U+FFFD, so a text without one came from valid UTF-8; one with it (rare: invalid bytes or
   * a genuine U+FFFD) is read again by string(true), whose strict decoding tells them apart.
   */
  text(): string {
    const start = this.pos;
    const len = this.uint32();
    const from = this.pos;
    const to = from + len;
    if (to <= this.len) {
      const s = this.data.toString('utf8', from, to);
      if (!s.includes('\uFFFD')) {
        this.pos = to;
        return s;
      }
    }
    this.pos = start;
    try {
      return this.string(true);
    } catch (err) {
      throw new WireDecodeError('invalid UTF-8 in a string field, or premature end', { cause: err });
    }
  }

  /** End offset of a length-delimited field whose length comes next; it must end within `limit`. */
  fieldEnd(limit: number): number {
    const end = this.uint32() + this.pos;
    if (end > limit) throw new WireDecodeError('a field runs past the end of its message');
    return end;
  }

  /** A message must end exactly where its length said: protobuf-es would read on into the parent. */
  checkEnd(end: number): void {
    if (this.pos !== end) throw new WireDecodeError('a field runs past the end of its message');
  }
}

/**
 * The request's series and metadata, or undefined when a series carries exemplars or native
 * histograms (fields this reader leaves to protobuf-es). Throws WireDecodeError on malformed bytes.
 */
export function readPlainWriteRequest(bytes: Uint8Array): WireWriteRequest | undefined {
  return wireErrors(() => request(new Reader(bytes)));
}

/** `read`, with BinaryReader's errors for bad bytes turned into WireDecodeError. */
function wireErrors<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof WireDecodeError) throw err;
    // BinaryReader reports bad bytes as plain Errors and RangeErrors (premature EOF, invalid
    // varint); a TypeError or the like is a bug here and must not pass for bad input.
    if (err instanceof RangeError || (err instanceof Error && err.constructor === Error)) throw new WireDecodeError(err.message, { cause: err });
    throw err;
  }
}

const wrongType = (field: number, wt: number) => new WireDecodeError(`field ${field} has wire type ${wt}`);

function request(r: Reader): WireWriteRequest | undefined {
  const len = r.len;
  const timeseries: WireSeries[] = [];
  const metadata: WireMetadata[] = [];
  while (r.pos < len) {
    const tag = r.fieldTag();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WireType.LengthDelimited) {
      const s = series(r, r.fieldEnd(len));
      if (!s) return undefined;
      timeseries.push(s);
    } else if (field === 3 && wt === WireType.LengthDelimited) metadata.push(meta(r, r.fieldEnd(len)));
    else if (field === 1 || field === 3) throw wrongType(field, wt);
    else r.skip(wt, field);
  }
  return { timeseries, metadata };
}

function series(r: Reader, end: number): WireSeries | undefined {
  const samples: Array<{ value: number; timestamp: bigint }> = [];
  // Label fields usually come first and together: one range of the request then; pieces
  // copied together otherwise. Only their framing is read here (see WireSeries).
  let pieces: Buffer[] | undefined;
  let runStart = -1;
  let runEnd = -1;
  while (r.pos < end) {
    const at = r.pos;
    const tag = r.fieldTag();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WireType.LengthDelimited) {
      r.pos = r.fieldEnd(end);
      if (at !== runEnd) {
        if (runStart >= 0) (pieces ??= []).push(r.data.subarray(runStart, runEnd));
        runStart = at;
      }
      runEnd = r.pos;
    } else if (field === 2 && wt === WireType.LengthDelimited) samples.push(sample(r, r.fieldEnd(end)));
    else if (field === 3 || field === 4) return undefined;
    else if (field === 1 || field === 2) throw wrongType(field, wt);
    else r.skip(wt, field);
  }
  r.checkEnd(end);
  if (pieces === undefined) {
    // One run (or none): the labels are a range of the request.
    return new WireSeries(samples, { data: r.data, view: r.dataView, from: Math.max(runStart, 0), to: Math.max(runEnd, 0) });
  }
  pieces.push(r.data.subarray(runStart, runEnd));
  const joined = Buffer.concat(pieces);
  return new WireSeries(samples, { data: joined, view: viewOf(joined), from: 0, to: joined.length });
}

const NAME_LABEL = Buffer.from('__name__');

function isMetricNameLabel(data: Buffer, from: number, to: number): boolean {
  if (to - from !== NAME_LABEL.length) return false;
  for (let i = 0; i < NAME_LABEL.length; i++) if (data[from + i] !== NAME_LABEL[i]) return false;
  return true;
}

/**
 * A Label message's name and value as byte ranges appended to `ranges` (an absent field is an
 * empty range, as protobuf's default ''); false when it held a field other than those two.
 */
function label(r: Reader, end: number, ranges: number[]): boolean {
  let nameFrom = end;
  let nameTo = end;
  let valueFrom = end;
  let valueTo = end;
  let plain = true;
  while (r.pos < end) {
    const tag = r.fieldTag();
    const field = tag >>> 3;
    const wt = tag & 7;
    if ((field === 1 || field === 2) && wt === WireType.LengthDelimited) {
      const to = r.fieldEnd(end);
      // The last occurrence of a field wins, as in protobuf; an earlier one must be valid text too.
      const [from0, to0] = field === 1 ? [nameFrom, nameTo] : [valueFrom, valueTo];
      if (from0 !== end && !isUtf8(r.data.subarray(from0, to0))) throw new WireDecodeError('invalid UTF-8 in a string field');
      if (field === 1) [nameFrom, nameTo] = [r.pos, to];
      else [valueFrom, valueTo] = [r.pos, to];
      r.pos = to;
    } else if (field === 1 || field === 2) throw wrongType(field, wt);
    else {
      r.skip(wt, field);
      plain = false;
    }
  }
  r.checkEnd(end);
  ranges.push(nameFrom, nameTo, valueFrom, valueTo);
  return plain;
}

function sample(r: Reader, end: number): { value: number; timestamp: bigint } {
  let value = 0;
  let timestamp = 0n;
  while (r.pos < end) {
    const tag = r.fieldTag();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WireType.Bit64) {
      if (r.pos + 8 > end) throw new WireDecodeError('a field runs past the end of its message');
      value = r.double();
    } else if (field === 2 && wt === WireType.Varint) {
      const t = r.int64();
      // A string only where BigInt is unavailable (BUF_BIGINT_DISABLE), as protobuf-es would give.
      timestamp = typeof t === 'bigint' ? t : BigInt(t);
    } else if (field === 1 || field === 2) throw wrongType(field, wt);
    else r.skip(wt, field);
  }
  r.checkEnd(end);
  return { value, timestamp };
}

function meta(r: Reader, end: number): WireMetadata {
  const m: WireMetadata = { type: 0, metricFamilyName: '', help: '', unit: '' };
  while (r.pos < end) {
    const tag = r.fieldTag();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WireType.Varint) m.type = r.int32();
    else if (field === 2 && wt === WireType.LengthDelimited) m.metricFamilyName = r.text();
    else if (field === 4 && wt === WireType.LengthDelimited) m.help = r.text();
    else if (field === 5 && wt === WireType.LengthDelimited) m.unit = r.text();
    else if (field === 1 || field === 2 || field === 4 || field === 5) throw wrongType(field, wt);
    else r.skip(wt, field);
  }
  r.checkEnd(end);
  return m;
}
