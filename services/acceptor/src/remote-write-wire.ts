/**
 * Prometheus remote write 1.0, read straight from the wire for the common request: series of
 * plain float samples and metric metadata. protobuf-es builds a message object per label and per
 * sample, which made decoding most of the CPU a remote-written sample cost (bench/RESULTS.md);
 * this reader yields the few fields the conversion reads and nothing else. No well-kept library
 * decodes a protobuf message lazily into caller-chosen shapes, hence the hand-written walk.
 *
 * It covers exactly the fields it needs (prompb.WriteRequest: timeseries = 1, metadata = 3;
 * TimeSeries: labels = 1, samples = 2; Label: name = 1, value = 2; Sample: value = 1 (double),
 * timestamp = 2 (int64); MetricMetadata: type = 1, metric_family_name = 2, help = 4, unit = 5)
 * and skips unknown fields as protobuf does. It returns undefined for anything else it would
 * have to interpret (a series with exemplars or native histograms) and throws on bytes that are
 * not a valid message; in both cases the caller decodes with protobuf-es instead, so that path's
 * results and error messages stay the reference.
 */

export interface WireSeries {
  labels: Array<readonly [string, string]>;
  samples: Array<{ value: number; timestamp: bigint }>;
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

class Reader {
  readonly buf: Buffer;
  readonly view: DataView;
  pos = 0;

  constructor(bytes: Uint8Array) {
    this.buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** A varint's low 32 bits, unsigned (tags, lengths; `| 0` for an int32), as protobuf-es reads one. */
  u32(): number {
    let result = 0;
    let shift = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.buf.length) throw new Error('premature end');
      const b = this.buf[this.pos++]!;
      if (shift < 32) result |= (b & 0x7f) << shift;
      if (b < 0x80) return result >>> 0;
      shift += 7;
    }
    throw new Error('varint too long');
  }

  /** A varint as an int64. */
  i64(): bigint {
    let lo = 0;
    let hi = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.buf.length) throw new Error('premature end');
      const b = this.buf[this.pos++]!;
      if (i < 4) lo |= (b & 0x7f) << (7 * i);
      else if (i === 4) {
        lo |= (b & 0x0f) << 28;
        hi |= (b & 0x7f) >> 4;
      } else hi |= (b & 0x7f) << (7 * i - 32);
      if (b < 0x80) {
        if (hi === 0 && lo >= 0) return BigInt(lo);
        return BigInt.asIntN(64, (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0));
      }
    }
    throw new Error('varint too long');
  }

  /** End offset of a length-delimited field whose length comes next. */
  end(limit: number): number {
    const n = this.u32();
    const e = this.pos + n;
    if (e > limit) throw new Error('premature end');
    return e;
  }

  str(limit: number): string {
    const e = this.end(limit);
    const s = this.buf.toString('utf8', this.pos, e);
    this.pos = e;
    return s;
  }

  f64(limit: number): number {
    if (this.pos + 8 > limit) throw new Error('premature end');
    const v = this.view.getFloat64(this.pos, true);
    this.pos += 8;
    return v;
  }

  /** Skips a field of wire type `wt` (groups are refused: no remote write message has one). */
  skip(wt: number, limit: number): void {
    switch (wt) {
      case 0:
        this.u32();
        return;
      case 1:
        if (this.pos + 8 > limit) throw new Error('premature end');
        this.pos += 8;
        return;
      case 2:
        this.pos = this.end(limit);
        return;
      case 5:
        if (this.pos + 4 > limit) throw new Error('premature end');
        this.pos += 4;
        return;
      default:
        throw new Error(`unsupported wire type ${wt}`);
    }
  }
}

const WT_VARINT = 0;
const WT_I64 = 1;
const WT_LEN = 2;

/**
 * The request's series and metadata, or undefined when a series carries exemplars or native
 * histograms (fields this reader leaves to protobuf-es). Throws on malformed bytes.
 */
export function readPlainWriteRequest(bytes: Uint8Array): WireWriteRequest | undefined {
  const r = new Reader(bytes);
  const len = r.buf.length;
  const timeseries: WireSeries[] = [];
  const metadata: WireMetadata[] = [];
  while (r.pos < len) {
    const tag = r.u32();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WT_LEN) {
      const s = series(r, r.end(len));
      if (!s) return undefined;
      timeseries.push(s);
    } else if (field === 3 && wt === WT_LEN) metadata.push(meta(r, r.end(len)));
    else if (field === 1 || field === 3 || field === 0) throw new Error(`field ${field} has wire type ${wt}`);
    else r.skip(wt, len);
  }
  return { timeseries, metadata };
}

function series(r: Reader, end: number): WireSeries | undefined {
  const labels: Array<readonly [string, string]> = [];
  const samples: Array<{ value: number; timestamp: bigint }> = [];
  while (r.pos < end) {
    const tag = r.u32();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WT_LEN) labels.push(label(r, r.end(end)));
    else if (field === 2 && wt === WT_LEN) samples.push(sample(r, r.end(end)));
    else if (field === 3 || field === 4) return undefined;
    else if (field === 1 || field === 2 || field === 0) throw new Error(`field ${field} has wire type ${wt}`);
    else r.skip(wt, end);
  }
  if (r.pos !== end) throw new Error('premature end');
  return { labels, samples };
}

function label(r: Reader, end: number): readonly [string, string] {
  let name = '';
  let value = '';
  while (r.pos < end) {
    const tag = r.u32();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WT_LEN) name = r.str(end);
    else if (field === 2 && wt === WT_LEN) value = r.str(end);
    else if (field === 1 || field === 2 || field === 0) throw new Error(`field ${field} has wire type ${wt}`);
    else r.skip(wt, end);
  }
  if (r.pos !== end) throw new Error('premature end');
  return [name, value];
}

function sample(r: Reader, end: number): { value: number; timestamp: bigint } {
  let value = 0;
  let timestamp = 0n;
  while (r.pos < end) {
    const tag = r.u32();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WT_I64) value = r.f64(end);
    else if (field === 2 && wt === WT_VARINT) timestamp = r.i64();
    else if (field === 1 || field === 2 || field === 0) throw new Error(`field ${field} has wire type ${wt}`);
    else r.skip(wt, end);
  }
  if (r.pos !== end) throw new Error('premature end');
  return { value, timestamp };
}

function meta(r: Reader, end: number): WireMetadata {
  const m: WireMetadata = { type: 0, metricFamilyName: '', help: '', unit: '' };
  while (r.pos < end) {
    const tag = r.u32();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === WT_VARINT) m.type = r.u32() | 0; // an int32 enum, as protobuf-es reads it
    else if (field === 2 && wt === WT_LEN) m.metricFamilyName = r.str(end);
    else if (field === 4 && wt === WT_LEN) m.help = r.str(end);
    else if (field === 5 && wt === WT_LEN) m.unit = r.str(end);
    else if (field === 1 || field === 2 || field === 4 || field === 5 || field === 0) throw new Error(`field ${field} has wire type ${wt}`);
    else r.skip(wt, end);
  }
  if (r.pos !== end) throw new Error('premature end');
  return m;
}
