import { describe, expect, it } from 'vitest';
import { BinaryReader } from '@floe/proto';
import { crc32c } from '@floe/runtime';
import { FRAME_BYTES, streamedFrames, type SeriesWindow } from './remote-read.ts';

/**
 * How a streamed remote read answer is cut into frames (the e2e checks the chunks' contents
 * against a real Prometheus; a frame limit needs more samples than an e2e should write): no
 * message above FRAME_BYTES, a long series continued in the next frame with its labels, every
 * frame's CRC, and each query's frames marked with its index.
 */

/** Per frame: query index, and per series its labels and each chunk's byte length. */
function frames(bytes: Uint8Array[]) {
  return bytes.map((f) => {
    const head = new BinaryReader(f);
    const length = head.uint32();
    const message = f.subarray(head.pos + 4);
    expect(message.length).toBe(length);
    expect(new DataView(f.buffer, f.byteOffset + head.pos, 4).getUint32(0, false)).toBe(crc32c(message));
    const r = new BinaryReader(message);
    const out = { length, queryIndex: 0, series: [] as { labels: string[]; chunks: number }[] };
    while (r.pos < r.len) {
      const [field, wire] = r.tag();
      if (field === 2) out.queryIndex = Number(r.int64());
      else if (field === 1) {
        const s = new BinaryReader(r.bytes());
        const series = { labels: [] as string[], chunks: 0 };
        while (s.pos < s.len) {
          const [f2, w2] = s.tag();
          if (f2 === 1) {
            const l = new BinaryReader(s.bytes());
            l.tag();
            const name = l.string();
            l.tag();
            series.labels.push(`${name}=${l.string()}`);
          } else if (f2 === 2) {
            s.bytes();
            series.chunks++;
          } else s.skip(w2);
        }
        out.series.push(series);
      } else r.skip(wire);
    }
    return out;
  });
}

const series = (name: string, n: number, noisy: boolean): SeriesWindow => {
  const t = Float64Array.from({ length: n }, (_, i) => 1_700_000_000_000 + i * 15_000);
  // Noisy values take ~8 bytes a sample in XOR; constant ones a bit each.
  const v = Float64Array.from({ length: n }, (_, i) => (noisy ? Math.sin(i) * 1e6 + i / 7 : 1));
  return { series: { labels: { __name__: name, job: 'j' }, t, v } as unknown as SeriesWindow['series'], from: 0, to: n, key: name };
};

describe('streamed remote read frames', () => {
  it('continues a series larger than a frame in the next one, labels repeated, each frame under the limit', () => {
    const big = series('big', 300_000, true);
    const out = frames(streamedFrames([[big, series('small', 10, false)], [series('other', 5, false)]]));
    expect(out.length).toBeGreaterThanOrEqual(3);
    for (const f of out) expect(f.length).toBeLessThanOrEqual(FRAME_BYTES);
    const ofQuery0 = out.filter((f) => f.queryIndex === 0);
    const bigParts = ofQuery0.flatMap((f) => f.series).filter((s) => s.labels[0] === '__name__=big');
    expect(bigParts.length).toBeGreaterThan(1);
    for (const s of bigParts) expect(s.labels).toEqual(['__name__=big', 'job=j']);
    // Every sample's chunk is there: 120 samples a chunk.
    expect(bigParts.reduce((n, s) => n + s.chunks, 0)).toBe(Math.ceil(300_000 / 120));
    // The small series shares the last frame of query 0; query 1 has a frame of its own.
    expect(ofQuery0.at(-1)!.series.map((s) => s.labels[0])).toContain('__name__=small');
    expect(out.filter((f) => f.queryIndex === 1).map((f) => f.series.map((s) => s.labels[0]))).toEqual([['__name__=other']]);
  });

  it('sends no frame for a query without series', () => {
    expect(streamedFrames([[], [series('x', 3, false)], []]).length).toBe(1);
    expect(frames(streamedFrames([[], [series('x', 3, false)]]))[0]!.queryIndex).toBe(1);
  });
});
