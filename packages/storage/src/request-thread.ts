import { Worker } from 'node:worker_threads';

/** A request without its id, for each kind of a union of requests. */
type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;

/**
 * A worker thread that answers requests one reply each (`{ id }` in both directions), started on
 * first use and again after it went away, and not keeping the process alive while nothing is
 * waiting. When the thread goes away, only the requests it held fail: after close() a new thread
 * may already be at work on later ones.
 */
export class RequestThread<Req extends { id: number }, Reply extends { id: number }> {
  readonly #url: URL;
  readonly #name: string;
  #worker: Worker | undefined;
  /** Requests awaiting their reply, with the thread each was sent to. */
  readonly #pending = new Map<number, { worker: Worker; resolve: (r: Reply) => void; reject: (e: Error) => void }>();
  #nextId = 1;

  /** `name` says what the thread does, in errors ("the Parquet encoding thread"). */
  constructor(url: URL, name: string) {
    this.#url = url;
    this.#name = name;
  }

  /**
   * Sends the request (its id filled in) and resolves with the reply; rejects when the thread goes
   * away first. `transfer` moves those buffers to the thread instead of copying them (they are
   * unusable here afterwards).
   */
  request(body: WithoutId<Req>, transfer: readonly ArrayBuffer[] = []): Promise<Reply> {
    const worker = this.#start();
    const id = this.#nextId++;
    return new Promise<Reply>((resolve, reject) => {
      this.#pending.set(id, { worker, resolve, reject });
      worker.ref();
      worker.postMessage({ ...body, id }, [...transfer]);
    });
  }

  /** Requests sent and not yet answered. */
  get pending(): number {
    return this.#pending.size;
  }

  close(): void {
    const w = this.#worker;
    this.#worker = undefined;
    if (w) void w.terminate();
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(this.#url);
    const waiting = () => {
      for (const p of this.#pending.values()) if (p.worker === worker) return true;
      return false;
    };
    worker.on('message', (reply: Reply) => {
      const p = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      if (!waiting()) worker.unref();
      p?.resolve(reply);
    });
    const fail = (err: Error) => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const [id, p] of this.#pending) {
        if (p.worker !== worker) continue;
        this.#pending.delete(id);
        p.reject(err);
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`${this.#name} exited (code ${code})`)));
    worker.unref();
    this.#worker = worker;
    return worker;
  }
}
