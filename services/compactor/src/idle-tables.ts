/**
 * What the open-hour passes remember of the tables they found nothing to do in, so the next
 * passes can leave them alone without reading their metadata or manifests (with thousands of
 * tables, most idle, that reading was nearly all of a pass: bench/open-hours).
 *
 * A table's open-hour plan depends on its metadata (so on its catalog pointer: every commit, by
 * the writer, a full pass, another compactor, an operator, moves it) and on the clock, through
 * the files left out for being too young. Hence an entry is the pointer the visit started from
 * and the earliest time one of those files comes of age; the table is idle while both hold.
 * Closing an hour only takes files out of the open-hour plan, so it needs no wake-up of its own.
 * One small entry per table this compactor visits; tables it no longer lists are dropped.
 */
export class IdleTables {
  readonly #entries = new Map<string, { pointer: string; wakeAtMs: number | undefined }>();

  /** Whether `table` is known to have nothing to do while its pointer is `pointer`, at `nowMs`. */
  isIdle(table: string, pointer: string, nowMs: number): boolean {
    const e = this.#entries.get(table);
    return e !== undefined && e.pointer === pointer && (e.wakeAtMs === undefined || nowMs < e.wakeAtMs);
  }

  /**
   * After a complete visit that started from `pointer`: nothing to do until the pointer moves or
   * `wakeAtMs` passes. A visit that committed moved the pointer itself, so the next pass looks
   * again (its merges can make new neighbours to merge).
   */
  remember(table: string, pointer: string, wakeAtMs: number | undefined): void {
    this.#entries.set(table, { pointer, wakeAtMs });
  }

  forget(table: string): void {
    this.#entries.delete(table);
  }

  /** Keeps only the entries of `tables` (those a complete pass listed as this compactor's). */
  retain(tables: ReadonlySet<string>): void {
    for (const table of this.#entries.keys()) if (!tables.has(table)) this.#entries.delete(table);
  }
}
