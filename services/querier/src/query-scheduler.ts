import type { FloeConfig } from '@floe/config';
import { FloeError } from '@floe/errors';
import type { SelfTelemetry } from '@floe/telemetry';

export interface QuerySchedulerOptions {
  /** Queries that run at once (querier.max_concurrent). */
  maxConcurrent: number;
  /** Queries one tenant may have waiting (querier.max_queued_per_tenant); more are refused. */
  maxQueuedPerTenant: number;
  /** Told how long each query waited for its turn, in ms. */
  onStart?: (waitedMs: number) => void;
}

interface Waiting {
  start: () => void;
  timer: NodeJS.Timeout | undefined;
}

/**
 * A querier's admission of queries, as Loki's and Mimir's query schedulers do it: at most
 * `maxConcurrent` run at once, so DuckDB's memory (querier.memory_limit per query) and threads stay
 * bounded whatever the callers send; the rest wait in one queue per tenant, and the tenants with
 * queries waiting take turns for each slot that frees, so one tenant's burst (a dashboard of fifty
 * panels, a script) delays its own queries, not everyone's. A tenant with `maxQueuedPerTenant`
 * waiting is refused at once (429, "too many outstanding requests"); a query still waiting at its
 * deadline fails with a timeout and never runs.
 */
export class QueryScheduler {
  readonly #o: QuerySchedulerOptions;
  #running = 0;
  /** Waiting queries by tenant, each in arrival order; the map's order is the tenants' turn order. */
  readonly #queues = new Map<string, Waiting[]>();

  constructor(o: QuerySchedulerOptions) {
    this.#o = o;
  }

  get running(): number {
    return this.#running;
  }

  get queued(): number {
    let n = 0;
    for (const q of this.#queues.values()) n += q.length;
    return n;
  }

  /** Waiting queries per tenant that has any (`GET /status`). */
  queuedByTenant(): Record<string, number> {
    return Object.fromEntries([...this.#queues].map(([tenant, q]) => [tenant, q.length]));
  }

  /**
   * Runs `work` in a slot. `deadlineMs`: how long the caller waits in all (absent: no limit);
   * `work` is given what is left of it once its turn comes. A query whose caller goes away
   * (`signal`) while it waits leaves the queue and never runs: a client that gives up on its
   * calls cannot fill its tenant's queue with work nobody reads.
   */
  async run<T>(tenant: string, deadlineMs: number | undefined, work: (remainingMs: number | undefined) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw cancelled();
    const arrived = performance.now();
    if (this.#running >= this.#o.maxConcurrent) await this.#wait(tenant, deadlineMs, signal);
    else this.#running++;
    const waited = performance.now() - arrived;
    this.#o.onStart?.(waited);
    try {
      return await work(deadlineMs === undefined ? undefined : Math.max(1, deadlineMs - waited));
    } finally {
      this.#release();
    }
  }

  #wait(tenant: string, deadlineMs: number | undefined, signal: AbortSignal | undefined): Promise<void> {
    let queue = this.#queues.get(tenant);
    if ((queue?.length ?? 0) >= this.#o.maxQueuedPerTenant) {
      return Promise.reject(
        new FloeError('rate_limited', `too many outstanding requests: tenant ${tenant} already has ${this.#o.maxQueuedPerTenant} queries waiting for this querier (querier.max_queued_per_tenant)`, { headers: { 'Retry-After': '1' } }),
      );
    }
    if (!queue) this.#queues.set(tenant, (queue = []));
    const q = queue;
    return new Promise<void>((resolve, reject) => {
      const leave = (err: FloeError) => {
        clearTimeout(entry.timer);
        signal?.removeEventListener('abort', onAbort);
        this.#remove(tenant, q, entry);
        reject(err);
      };
      const onAbort = () => leave(cancelled());
      const entry: Waiting = {
        start: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        timer: undefined,
      };
      if (deadlineMs !== undefined) {
        entry.timer = setTimeout(() => leave(new FloeError('timeout', 'query timed out waiting for a free querier slot (querier.max_concurrent)')), deadlineMs);
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      q.push(entry);
    });
  }

  #remove(tenant: string, queue: Waiting[], entry: Waiting): void {
    const i = queue.indexOf(entry);
    if (i < 0) return;
    queue.splice(i, 1);
    if (queue.length === 0) this.#queues.delete(tenant);
  }

  /** A slot is free: the next tenant in turn starts its oldest query, then goes to the back. */
  #release(): void {
    const next = this.#queues.entries().next();
    if (next.done) {
      this.#running--;
      return;
    }
    const [tenant, queue] = next.value;
    const entry = queue.shift()!;
    this.#queues.delete(tenant);
    if (queue.length > 0) this.#queues.set(tenant, queue);
    clearTimeout(entry.timer);
    // The slot passes straight to it: `running` stays as it is.
    entry.start();
  }
}

const cancelled = () => new FloeError('canceled', 'the query was cancelled by its caller before it ran');

/** Runs a tenant's query in its turn, given the caller's time left and handing on what remains of it; `signal`: the caller went away. */
export type Schedule = <T>(tenant: string, callerMs: number | undefined, work: (remainingMs: number | undefined) => Promise<T>, signal?: AbortSignal) => Promise<T>;

/** The querier's scheduler from querier.max_concurrent and max_queued_per_tenant, with its gauges and wait histogram. */
export function schedulerFromConfig(config: Readonly<FloeConfig>, telemetry: SelfTelemetry): QueryScheduler {
  const m = telemetry.meter;
  const wait = m.createHistogram('query_wait_duration', { description: 'How long a query waited for a free slot of this querier (querier.max_concurrent)', unit: 's' });
  const scheduler = new QueryScheduler({
    maxConcurrent: config.querier.max_concurrent,
    maxQueuedPerTenant: config.querier.max_queued_per_tenant,
    onStart: (ms) => wait.record(ms / 1000),
  });
  const running = m.createObservableGauge('queries_running', { description: 'Queries this querier is running' });
  const queued = m.createObservableGauge('queries_queued', { description: 'Queries waiting for a free slot of this querier' });
  const limit = m.createObservableGauge('queries_max_concurrent', { description: 'querier.max_concurrent: queries this querier runs at once' });
  m.addBatchObservableCallback(
    (r) => {
      r.observe(running, scheduler.running);
      r.observe(queued, scheduler.queued);
      r.observe(limit, config.querier.max_concurrent);
    },
    [running, queued, limit],
  );
  return scheduler;
}
