/**
 * Lets the event loop run between the steps of a long synchronous stretch of work.
 *
 * In one process (`floe all`) the writer's committer shares its event loop with ingest. Awaiting a
 * promise that has already settled (a segment read by the fs store's synchronous calls) runs only
 * microtasks, so a loop of such awaits never lets I/O callbacks in: a 512-segment round held the
 * loop for 100-180 ms, and every WAL fsync that completed meanwhile, and the acknowledgements
 * waiting on it, waited for the round.
 */
export class LoopSlices {
  readonly #sliceMs: number;
  #since = performance.now();

  constructor(sliceMs = 4) {
    this.#sliceMs = sliceMs;
  }

  /** Yields to the event loop (after its I/O callbacks) once the current slice has run sliceMs. */
  async pause(): Promise<void> {
    if (performance.now() - this.#since < this.#sliceMs) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.#since = performance.now();
  }
}
