import { create, PprofProfileSchema, toBinary } from '@floe/proto';

/**
 * A Go CPU profile as pprof bytes, as a Go program's runtime/pprof writes it: sample types
 * samples/count and cpu/nanoseconds at a 10 ms period; 3 samples (30 ms) in main.work under
 * main.main and 1 (10 ms) in main.main itself. `timeNanos` 0: no time of its own.
 */
export function goCpuPprof(timeNanos = 0n): Uint8Array {
  return toBinary(
    PprofProfileSchema,
    create(PprofProfileSchema, {
      sampleType: [
        { type: 1n, unit: 2n },
        { type: 3n, unit: 4n },
      ],
      periodType: { type: 3n, unit: 4n },
      period: 10_000_000n,
      timeNanos,
      durationNanos: timeNanos > 0n ? 10_000_000_000n : 0n,
      stringTable: ['', 'samples', 'count', 'cpu', 'nanoseconds', 'main.main', 'main.work'],
      function: [
        { id: 1n, name: 5n },
        { id: 2n, name: 6n },
      ],
      location: [
        { id: 1n, line: [{ functionId: 1n }] },
        { id: 2n, line: [{ functionId: 2n }] },
      ],
      sample: [
        { locationId: [2n, 1n], value: [3n, 30_000_000n] },
        { locationId: [1n], value: [1n, 10_000_000n] },
      ],
    }),
  );
}
