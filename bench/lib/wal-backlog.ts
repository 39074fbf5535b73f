import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The WAL backlog of a `floe all` started by startFloeProcess: the number of WAL segments the
 * acceptor has made durable and the writer has not yet committed and deleted. Sampled during a
 * run it shows whether the writer keeps up (flat) or falls behind (growing).
 */
export class WalBacklog {
  readonly samples: number[] = [];
  readonly #dir: string;

  constructor(floeDir: string) {
    this.#dir = join(floeDir, 'data', 'wal');
  }

  count(): number {
    try {
      return readdirSync(this.#dir).filter((f) => f.endsWith('.wal')).length;
    } catch {
      return 0;
    }
  }

  sample(): void {
    this.samples.push(this.count());
  }

  /** Waits until no segment is left (or `timeoutMs`); answers how long that took. */
  async drained(timeoutMs = 120_000): Promise<{ ms: number; left: number }> {
    const start = Date.now();
    while (this.count() > 0 && Date.now() - start < timeoutMs) await new Promise((r) => setTimeout(r, 250));
    return { ms: Date.now() - start, left: this.count() };
  }
}
