import { compress, uncompress } from 'snappyjs';
import { PromMetricMetadata_MetricType, PromWriteRequestSchema, fromBinary } from '@floe/proto';
import { remoteWriteMetadataBody, type MetricFamily } from '@floe/testkit';

export { REMOTE_WRITE_HEADERS } from '@floe/testkit';

/**
 * A Prometheus remote-write 1.0 stream as a Prometheus server's remote-write queue sends it, for
 * benchmarks: `series` series of a fleet of scraped services (job / instance / method / status
 * labels; request counters, duration sums and counts, in-flight, memory, CPU and goroutine
 * gauges), scraped every `intervalMs` from `t0Ms` on, each instance at its own offset inside the
 * interval. The series are spread over `shards` like the queue's shards: shard w owns the series
 * s with s % shards == w and sends them in order, one request after the other, so no series ever
 * goes backwards in time (Prometheus answers an out-of-order sample with 400). Each scrape round
 * of a shard is cut into requests of about `perRequest` samples; every TimeSeries carries one
 * sample, as the queue sends them.
 *
 * Bodies are snappy block-compressed prometheus.WriteRequest messages. Compressing each request
 * with snappyjs would cost the load generator about 0.2 ms of CPU per 500 samples, CPU that the
 * 2-core benchmark machine takes away from the receiver under test; so each request shape is
 * encoded and compressed once (`PatchableSnappy`: a greedy snappy encoder that keeps the bytes of
 * sample values and timestamps inside literals) and every request is that template with its
 * values and timestamps written in place. The templates are checked against snappyjs's decoder
 * and @floe/proto's WriteRequest decoder when built.
 */
export interface RemoteWriteStreamOptions {
  series: number;
  shards: number;
  perRequest: number;
  t0Ms: number;
  intervalMs: number;
  /** Scrape rounds after which the stream ends (default: never). */
  rounds?: number;
}

export interface SeriesDef {
  /** Sorted by name, as Prometheus sends them. */
  labels: Array<[string, string]>;
  metric: string;
  counter: boolean;
  /** Index of the instance (scrape target) the series belongs to. */
  instance: number;
  job: string;
  value: (round: number) => number;
}

export const JOBS = ['api-gateway', 'checkout', 'search', 'auth'];
const METHODS = ['GET', 'POST', 'PUT', 'DELETE'];
const STATUSES = ['200', '201', '404', '500', '503'];
const STATUS_SHARE = [0.8, 0.1, 0.07, 0.02, 0.01];
const METHOD_SHARE = [0.7, 0.2, 0.07, 0.03];

/** Deterministic pseudo-random in [0, 1) from an integer. */
export const rnd = (n: number) => {
  let x = (n ^ 0x9e3779b9) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b) >>> 0;
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35) >>> 0;
  return ((x ^ (x >>> 16)) >>> 0) / 2 ** 32;
};

/** The fleet's series, 35 per instance, instances round-robin over four jobs. */
export function seriesCatalog(count: number, intervalMs: number): SeriesDef[] {
  const out: SeriesDef[] = [];
  const secs = intervalMs / 1000;
  for (let inst = 0; out.length < count; inst++) {
    const job = JOBS[inst % JOBS.length]!;
    const instance = `10.${1 + (inst % JOBS.length)}.${(inst >> 8) & 255}.${inst & 255}:8080`;
    const load = 5 + 45 * rnd(inst); // requests per second of this instance
    const add = (metric: string, extra: Array<[string, string]>, counter: boolean, value: (round: number) => number) => {
      const labels: Array<[string, string]> = [['__name__', metric], ['instance', instance], ['job', job], ...extra];
      labels.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      out.push({ labels, metric, counter, instance: inst, job, value });
    };
    METHODS.forEach((method, mi) => {
      STATUSES.forEach((status, si) => {
        const rate = load * METHOD_SHARE[mi]! * STATUS_SHARE[si]!;
        const id = out.length;
        const base = Math.floor(rnd(id) * 1e6 * rate);
        // Monotonic with jitter: r + jitter/2 < r + 1.
        add('http_requests_total', [['method', method], ['status', status]], true, (r) => base + Math.floor(secs * rate * (r + 0.5 * rnd(r * 131 + id))));
      });
    });
    METHODS.forEach((method, mi) => {
      const rate = load * METHOD_SHARE[mi]!;
      const latency = 0.01 + 0.2 * rnd(inst * 4 + mi);
      const base = Math.floor(rnd(inst + mi) * 1e6 * rate);
      add('http_request_duration_seconds_sum', [['method', method]], true, (r) => (base + r * secs * rate) * latency);
      add('http_request_duration_seconds_count', [['method', method]], true, (r) => base + Math.floor(r * secs * rate));
      add('http_inflight_requests', [['method', method]], false, (r) => Math.floor(rate * latency * (1 + Math.sin(r / 7 + mi))));
    });
    const mem = 100e6 + 400e6 * rnd(inst * 3);
    add('process_resident_memory_bytes', [], false, (r) => Math.floor((mem + 20e6 * Math.sin(r / 40 + inst)) / 4096) * 4096);
    const cpu = 0.05 + 0.5 * rnd(inst * 5);
    add('process_cpu_seconds_total', [], true, (r) => Math.round((1000 + r * secs * cpu) * 100) / 100);
    add('go_goroutines', [], false, (r) => 40 + ((r + inst) % 13));
  }
  return out.slice(0, count);
}

/** Scrape offset of an instance inside the interval (targets are not scraped in lockstep). */
export const scrapeOffsetMs = (instance: number, intervalMs: number) => Math.floor(rnd(instance * 7919) * intervalMs);

const FAMILIES: MetricFamily[] = [
  ['http_requests_total', PromMetricMetadata_MetricType.COUNTER, 'Requests served.'],
  ['http_request_duration_seconds_sum', PromMetricMetadata_MetricType.COUNTER, 'Total time serving requests.'],
  ['http_request_duration_seconds_count', PromMetricMetadata_MetricType.COUNTER, 'Requests timed.'],
  ['http_inflight_requests', PromMetricMetadata_MetricType.GAUGE, 'Requests in flight.'],
  ['process_resident_memory_bytes', PromMetricMetadata_MetricType.GAUGE, 'Resident memory size in bytes.'],
  ['process_cpu_seconds_total', PromMetricMetadata_MetricType.COUNTER, 'Total user and system CPU time spent in seconds.'],
  ['go_goroutines', PromMetricMetadata_MetricType.GAUGE, 'Number of goroutines that currently exist.'],
];

/** One metadata-only request (TYPE / HELP of each metric family), as the queue sends every minute. */
export const metadataRequest = (): Buffer => remoteWriteMetadataBody(FAMILIES);

// ---------------------------------------------------------------------------------------------
// Hand-encoded WriteRequest templates with known offsets of each sample's value and timestamp.

const TS_BYTES = 6; // a millisecond timestamp in [2^35, 2^42) is a 6-byte varint (1971 … 2109)

function varint(n: number): number[] {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return out;
}

function writeTs(buf: Uint8Array, at: number, ms: number): void {
  for (let k = 0; k < TS_BYTES - 1; k++) {
    buf[at + k] = (ms % 0x80) | 0x80;
    ms = Math.floor(ms / 0x80);
  }
  buf[at + TS_BYTES - 1] = ms;
}

interface RawTemplate {
  bytes: Uint8Array;
  /** Offsets of each sample's 8 value bytes and 6 timestamp bytes in `bytes`. */
  valueAt: number[];
  tsAt: number[];
}

function encodeTemplate(series: SeriesDef[]): RawTemplate {
  const enc = new TextEncoder();
  const parts: number[] = [];
  const valueAt: number[] = [];
  const tsAt: number[] = [];
  for (const s of series) {
    const labels: number[] = [];
    for (const [name, value] of s.labels) {
      const n = enc.encode(name);
      const v = enc.encode(value);
      const body = [0x0a, ...varint(n.length), ...n, 0x12, ...varint(v.length), ...v];
      labels.push(0x0a, ...varint(body.length), ...body);
    }
    // Sample { double value = 1; int64 timestamp = 2; } as field 2 of TimeSeries.
    const sampleLen = 1 + 8 + 1 + TS_BYTES;
    const tsLen = labels.length + 2 + sampleLen;
    parts.push(0x0a, ...varint(tsLen), ...labels, 0x12, sampleLen, 0x09);
    valueAt.push(parts.length);
    parts.push(0, 0, 0, 0, 0, 0, 0, 0, 0x10);
    tsAt.push(parts.length);
    parts.push(0x80, 0x80, 0x80, 0x80, 0x80, 0x01);
  }
  return { bytes: Uint8Array.from(parts), valueAt, tsAt };
}

/**
 * A snappy block encoding of `src` in which every byte marked in `variable` sits inside a literal
 * and no copy reads one: those bytes can then be rewritten in the compressed output (`at[i]` is
 * where src[i] landed) and the block still decodes to `src` with the new bytes. Greedy matching
 * over a hash of 4-byte sequences, copies with 2-byte offsets, as snappy's own encoder does.
 */
export class PatchableSnappy {
  readonly bytes: Uint8Array;
  readonly at: Int32Array;

  constructor(src: Uint8Array, variable: Uint8Array) {
    const n = src.length;
    const out: number[] = varint(n);
    const at = new Int32Array(n).fill(-1);
    const table = new Map<number, number>();
    const constant4 = (i: number) => variable[i] === 0 && variable[i + 1] === 0 && variable[i + 2] === 0 && variable[i + 3] === 0;
    const literal = (from: number, to: number) => {
      while (from < to) {
        const len = Math.min(to - from, 65536);
        const l = len - 1;
        if (l < 60) out.push(l << 2);
        else if (l < 256) out.push(60 << 2, l);
        else out.push(61 << 2, l & 0xff, l >> 8);
        for (let k = 0; k < len; k++) {
          at[from + k] = out.length;
          out.push(src[from + k]!);
        }
        from += len;
      }
    };
    const copy = (offset: number, len: number) => {
      while (len > 0) {
        const piece = Math.min(len, 64); // a copy with a 2-byte offset is 1–64 bytes long
        out.push(((piece - 1) << 2) | 2, offset & 0xff, offset >> 8);
        len -= piece;
      }
    };
    let i = 0;
    let lit = 0;
    while (i + 4 <= n) {
      if (!constant4(i)) {
        i++;
        continue;
      }
      const key = (src[i]! | (src[i + 1]! << 8) | (src[i + 2]! << 16) | (src[i + 3]! << 24)) >>> 0;
      const cand = table.get(key);
      table.set(key, i);
      if (cand === undefined || i - cand > 65535) {
        i++;
        continue;
      }
      let len = 4;
      while (i + len < n && variable[i + len] === 0 && variable[cand + len] === 0 && src[cand + len] === src[i + len]) len++;
      literal(lit, i);
      copy(i - cand, len);
      i += len;
      lit = i;
    }
    literal(lit, n);
    this.bytes = Uint8Array.from(out);
    this.at = at;
  }
}

interface Template {
  snappy: PatchableSnappy;
  series: SeriesDef[];
  /** Compressed-body offsets of each sample's value and timestamp. */
  valueAt: Int32Array;
  tsAt: Int32Array;
  /** Each sample's timestamp offset inside the round. */
  offsetMs: Float64Array;
  rawBytes: number;
}

function buildTemplate(series: SeriesDef[], intervalMs: number): Template {
  const raw = encodeTemplate(series);
  const variable = new Uint8Array(raw.bytes.length);
  for (const v of raw.valueAt) variable.fill(1, v, v + 8);
  for (const t of raw.tsAt) variable.fill(1, t, t + TS_BYTES);
  const snappy = new PatchableSnappy(raw.bytes, variable);
  const valueAt = new Int32Array(raw.valueAt.length);
  const tsAt = new Int32Array(raw.tsAt.length);
  raw.valueAt.forEach((v, k) => {
    const c = snappy.at[v]!;
    for (let b = 0; b < 8; b++) if (snappy.at[v + b] !== c + b) throw new Error('template: a value straddles two literals');
    valueAt[k] = c;
  });
  raw.tsAt.forEach((t, k) => {
    const c = snappy.at[t]!;
    for (let b = 0; b < TS_BYTES; b++) if (snappy.at[t + b] !== c + b) throw new Error('template: a timestamp straddles two literals');
    tsAt[k] = c;
  });
  const offsetMs = Float64Array.from(series.map((s) => scrapeOffsetMs(s.instance, intervalMs)));
  return { snappy, series, valueAt, tsAt, offsetMs, rawBytes: raw.bytes.length };
}

export interface RemoteWriteBody {
  body: Buffer;
  items: number;
}

export class RemoteWriteStream {
  readonly opts: RemoteWriteStreamOptions;
  readonly series: SeriesDef[];
  /** Per shard, the templates of one scrape round (its series cut into near-equal requests). */
  readonly #templates: Template[][];
  readonly #pos: Array<{ round: number; batch: number }>;

  constructor(opts: RemoteWriteStreamOptions) {
    if (opts.t0Ms < 2 ** 35 || opts.t0Ms + (opts.rounds ?? 1e6) * opts.intervalMs >= 2 ** 42) throw new Error('timestamps out of the 6-byte varint range');
    this.opts = opts;
    this.series = seriesCatalog(opts.series, opts.intervalMs);
    this.#templates = [];
    for (let w = 0; w < opts.shards; w++) {
      const mine = this.series.filter((_, s) => s % opts.shards === w);
      const batches = Math.max(1, Math.ceil(mine.length / opts.perRequest));
      const size = Math.ceil(mine.length / batches);
      const list: Template[] = [];
      for (let b = 0; b < mine.length; b += size) list.push(buildTemplate(mine.slice(b, b + size), opts.intervalMs));
      this.#templates.push(list);
    }
    this.#pos = Array.from({ length: opts.shards }, () => ({ round: 0, batch: 0 }));
    this.#verify();
  }

  /** Samples in the whole stream (when it has `rounds`). */
  get totalSamples(): number {
    return (this.opts.rounds ?? Infinity) * this.series.length;
  }

  /** Average request: samples, uncompressed and compressed bytes (what snappyjs would produce too). */
  shape(): { samplesPerRequest: number; rawBytes: number; bodyBytes: number; snappyjsBytes: number } {
    const all = this.#templates.flat();
    const samples = all.reduce((a, t) => a + t.series.length, 0);
    const raw = all.reduce((a, t) => a + t.rawBytes, 0);
    const body = all.reduce((a, t) => a + t.snappy.bytes.length, 0);
    const sj = all.reduce((a, t) => a + compress(uncompress(this.#patch(t, 1))).length, 0);
    return { samplesPerRequest: samples / all.length, rawBytes: raw / all.length, bodyBytes: body / all.length, snappyjsBytes: sj / all.length };
  }

  /** Shard w's next request, or undefined when the stream has ended. */
  next(w: number): RemoteWriteBody | undefined {
    const pos = this.#pos[w]!;
    const list = this.#templates[w]!;
    if (list.length === 0 || (this.opts.rounds !== undefined && pos.round >= this.opts.rounds)) return undefined;
    const t = list[pos.batch]!;
    const body = this.#patch(t, pos.round);
    if (++pos.batch === list.length) {
      pos.batch = 0;
      pos.round++;
    }
    return { body, items: t.series.length };
  }

  #patch(t: Template, round: number): Buffer {
    const body = Buffer.from(t.snappy.bytes);
    const base = this.opts.t0Ms + round * this.opts.intervalMs;
    for (let k = 0; k < t.series.length; k++) {
      body.writeDoubleLE(t.series[k]!.value(round), t.valueAt[k]!);
      writeTs(body, t.tsAt[k]!, base + t.offsetMs[k]!);
    }
    return body;
  }

  /** Every template, patched for two rounds, decodes (snappyjs, then protobuf) to what it says. */
  #verify(): void {
    for (const list of this.#templates) {
      for (const t of list) {
        for (const round of [0, 7]) {
          const req = fromBinary(PromWriteRequestSchema, uncompress(this.#patch(t, round)));
          if (req.timeseries.length !== t.series.length) throw new Error('template decodes to the wrong number of series');
          req.timeseries.forEach((ts, k) => {
            const s = t.series[k]!;
            const want = this.opts.t0Ms + round * this.opts.intervalMs + t.offsetMs[k]!;
            const got = ts.samples[0];
            if (ts.labels.map((l) => `${l.name}=${l.value}`).join(',') !== s.labels.map(([a, b]) => `${a}=${b}`).join(',')) throw new Error('template labels differ');
            if (!got || got.value !== s.value(round) || Number(got.timestamp) !== want) throw new Error(`template sample differs: ${got?.value} @ ${got?.timestamp}, want ${s.value(round)} @ ${want}`);
          });
        }
      }
    }
  }
}

/**
 * The uncompressed bodies of the first `requests` requests of the remote-write benchmark's stream
 * (8,000 series, 16 shards, 500 samples a request, scraped every second from `t0Ms`, shards taken
 * in turn) and their samples: the input of the benchmarks that time one part of ingest alone.
 */
export function firstRequestBodies(requests: number, t0Ms: number): { bodies: Uint8Array[]; samples: number } {
  const shards = 16;
  const stream = new RemoteWriteStream({ series: 8000, shards, perRequest: 500, t0Ms, intervalMs: 1000 });
  const bodies: Uint8Array[] = [];
  let samples = 0;
  for (let i = 0; i < requests; i++) {
    const next = stream.next(i % shards)!;
    bodies.push(uncompress(next.body));
    samples += next.items;
  }
  return { bodies, samples };
}
