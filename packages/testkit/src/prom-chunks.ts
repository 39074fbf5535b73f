import { BinaryReader, WireType } from '@floe/proto';
import { crc32c } from '@floe/runtime';

/**
 * A reader of Prometheus's streamed remote read answers (STREAMED_XOR_CHUNKS), for tests that
 * hold Floe's answer against a real Prometheus's: the frames (varint length, big-endian CRC-32C,
 * a ChunkedReadResponse), their series and XOR chunks, decoded to samples whose values are kept
 * as their exact bits (a staleness marker is one NaN among many).
 */

export interface StreamedFrame {
  queryIndex: number;
  series: StreamedSeries[];
}
export interface StreamedSeries {
  labels: Record<string, string>;
  chunks: StreamedChunk[];
}
export interface StreamedChunk {
  minTimeMs: number;
  maxTimeMs: number;
  /** prometheus.Chunk.Encoding: 1 is XOR. */
  type: number;
  samples: ChunkSample[];
}
export interface ChunkSample {
  t: number;
  /** The value's 64 bits as 16 hex digits (0x7ff0000000000002 is Prometheus's staleness marker). */
  bits: string;
  v: number;
}

/** Every frame of a streamed answer; a CRC mismatch or a cut frame throws. */
export function readStreamedFrames(body: Uint8Array): StreamedFrame[] {
  const frames: StreamedFrame[] = [];
  let at = 0;
  while (at < body.length) {
    const head = new BinaryReader(body.subarray(at));
    const length = head.uint32();
    const start = at + head.pos;
    if (start + 4 + length > body.length) throw new Error(`frame at byte ${at} is cut: ${length} bytes announced`);
    const crc = new DataView(body.buffer, body.byteOffset + start, 4).getUint32(0, false);
    const message = body.subarray(start + 4, start + 4 + length);
    if (crc32c(message) !== crc) throw new Error(`frame at byte ${at}: CRC-32C ${crc32c(message).toString(16)} is not the ${crc.toString(16)} it carries`);
    frames.push(chunkedReadResponse(message));
    at = start + 4 + length;
  }
  return frames;
}

function chunkedReadResponse(bytes: Uint8Array): StreamedFrame {
  const r = new BinaryReader(bytes);
  const frame: StreamedFrame = { queryIndex: 0, series: [] };
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1) frame.series.push(chunkedSeries(r.bytes()));
    else if (field === 2) frame.queryIndex = Number(r.int64());
    else r.skip(wire);
  }
  return frame;
}

function chunkedSeries(bytes: Uint8Array): StreamedSeries {
  const r = new BinaryReader(bytes);
  const out: StreamedSeries = { labels: {}, chunks: [] };
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1) {
      const l = new BinaryReader(r.bytes());
      let name = '';
      let value = '';
      while (l.pos < l.len) {
        const [f, w] = l.tag();
        if (f === 1) name = l.string();
        else if (f === 2) value = l.string();
        else l.skip(w);
      }
      out.labels[name] = value;
    } else if (field === 2) out.chunks.push(chunk(r.bytes()));
    else r.skip(wire);
  }
  return out;
}

function chunk(bytes: Uint8Array): StreamedChunk {
  const r = new BinaryReader(bytes);
  const out: StreamedChunk = { minTimeMs: 0, maxTimeMs: 0, type: 0, samples: [] };
  let data: Uint8Array = new Uint8Array(0);
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1) out.minTimeMs = Number(r.int64());
    else if (field === 2) out.maxTimeMs = Number(r.int64());
    else if (field === 3) out.type = r.int32();
    else if (field === 4 && wire === WireType.LengthDelimited) data = r.bytes();
    else r.skip(wire);
  }
  if (out.type === 1) out.samples = decodeXorChunk(data);
  return out;
}

class BitReader {
  #bytes: Uint8Array;
  #n = 0;
  constructor(bytes: Uint8Array, byteOffset: number) {
    this.#bytes = bytes;
    this.#n = byteOffset * 8;
  }
  bit(): bigint {
    if (this.#n >= this.#bytes.length * 8) throw new Error('XOR chunk ends early');
    const b = (this.#bytes[this.#n >> 3]! >> (7 - (this.#n & 7))) & 1;
    this.#n++;
    return BigInt(b);
  }
  bits(count: number): bigint {
    let v = 0n;
    for (let i = 0; i < count; i++) v = (v << 1n) | this.bit();
    return v;
  }
  uvarint(): bigint {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = this.bits(8);
      v |= (byte & 0x7fn) << shift;
      if ((byte & 0x80n) === 0n) return v;
    }
  }
}

const sampleOf = (t: bigint, bits: bigint): ChunkSample => {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, bits);
  return { t: Number(t), bits: bits.toString(16).padStart(16, '0'), v: view.getFloat64(0) };
};

/** The samples of one XOR chunk (Prometheus's tsdb/chunkenc XOR encoding), with BigInt arithmetic for clarity over speed. */
export function decodeXorChunk(data: Uint8Array): ChunkSample[] {
  const count = (data[0]! << 8) | data[1]!;
  const r = new BitReader(data, 2);
  const out: ChunkSample[] = [];
  let t = 0n;
  let delta = 0n;
  let bits = 0n;
  let leading = 0n;
  let trailing = 0n;
  for (let i = 0; i < count; i++) {
    if (i === 0) {
      const z = r.uvarint();
      t = z & 1n ? -((z + 1n) >> 1n) : z >> 1n;
      bits = r.bits(64);
    } else {
      if (i === 1) delta = r.uvarint();
      else {
        let size = 0;
        if (r.bit() === 1n) {
          size = 14;
          if (r.bit() === 1n) {
            size = 17;
            if (r.bit() === 1n) size = r.bit() === 1n ? 64 : 20;
          }
        }
        if (size > 0) {
          let dod = r.bits(size);
          if (size === 64) dod = BigInt.asIntN(64, dod);
          else if (dod > 1n << BigInt(size - 1)) dod -= 1n << BigInt(size);
          delta += dod;
        }
      }
      t += delta;
      if (r.bit() === 1n) {
        if (r.bit() === 1n) {
          leading = r.bits(5);
          let sig = r.bits(6);
          if (sig === 0n) sig = 64n;
          trailing = 64n - leading - sig;
        }
        const sig = 64n - leading - trailing;
        bits ^= r.bits(Number(sig)) << trailing;
      }
    }
    out.push(sampleOf(t, bits));
  }
  return out;
}
