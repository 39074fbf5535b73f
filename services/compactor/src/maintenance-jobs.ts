import { randomUUID } from 'node:crypto';
import { FloeError, toHttp } from '@floe/errors';
import type { AdminAnswer } from '@floe/runtime';
import { OPS_JOB_WAIT_DEFAULT_MS, OPS_JOB_WAIT_MAX_MS } from '@floe/schema';
import type { Logger } from '@floe/telemetry';
import type { TablePagesProgress } from './table-check.ts';

/**
 * Page checks (`check_pages` of `POST /tables/check` and `/tables/drop-damaged-files`) read every
 * live data file of a table whole, which can outlast any HTTP timeout between the operator and
 * the compactor. So they run as jobs: the action starts one, waits for it a bounded time
 * (`wait_ms`), and answers its result when it finished by then, exactly as the synchronous call
 * did, or a 202 naming the job, which `GET /jobs/{id}` answers until it is done.
 *
 * Jobs live in this process's memory only: a restarted compactor knows none of them (the work
 * they did is read-only or one compare-and-swap commit, so running one again is safe). Finished
 * jobs are kept for a while and a count, so memory stays bounded however many are asked for.
 */

export type JobKind = 'check_tables' | 'drop_damaged_files';
export type JobState = 'running' | 'done' | 'failed';

/** What a job's page walks have done so far, all tables together. */
export interface JobProgress {
  /** Tables whose page walk began. */
  tables: number;
  files_checked: number;
  files: number;
  bytes_checked: number;
  bytes: number;
  /** Files found with damaged pages. */
  damaged: number;
}

/** A job as `GET /jobs/{id}` answers it; `result` once finished: the HTTP status and body the synchronous call answers. */
export interface JobView {
  id: string;
  kind: JobKind;
  state: JobState;
  started_at: string;
  finished_at: string | null;
  progress: JobProgress;
  result?: AdminAnswer;
}

/** The 202 of an action whose job has not finished within its wait. */
export interface JobRunning {
  status: 'running';
  job: Pick<JobView, 'id' | 'kind' | 'state' | 'started_at' | 'progress'>;
}

/**
 * Jobs that run at once on a compactor. Each reads whole tables, three files at a time with 2 MiB
 * of memory each (table-check.ts), and they share the compactor's bandwidth to the store with its
 * passes: two let an operator check one table while another check or a drop runs, and keep an
 * operator's loop (or several operators) from reading the bucket many times over at once. Past it
 * a job is refused (429) naming the running ones, never queued: a queued job would outlive the
 * caller's wait for a reason it cannot see.
 */
export const MAX_RUNNING_JOBS = 2;

/** Finished jobs kept: at most this many, and none longer than KEEP_FINISHED_MS. */
const KEEP_FINISHED = 100;
const KEEP_FINISHED_MS = 3_600_000;

interface Job {
  view: JobView;
  /** The table a job holds for itself while it runs (see start's `exclusive`). */
  exclusive?: string;
  done: Promise<AdminAnswer>;
}

const emptyProgress = (): JobProgress => ({ tables: 0, files_checked: 0, files: 0, bytes_checked: 0, bytes: 0, damaged: 0 });

/** `wait_ms` of an action's body: absent or null the default, else an integer from 0 to OPS_JOB_WAIT_MAX_MS. */
export function parseWaitMs(value: unknown): number {
  if (value === undefined || value === null) return OPS_JOB_WAIT_DEFAULT_MS;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > OPS_JOB_WAIT_MAX_MS) {
    throw new FloeError('bad_data', `wait_ms must be an integer from 0 to ${OPS_JOB_WAIT_MAX_MS}`, { code: 'FLOE_ERR_OPS_JOB_WAIT' });
  }
  return value;
}

export class MaintenanceJobs {
  readonly #jobs = new Map<string, Job>();
  readonly #log: Logger;
  readonly #keep: number;
  readonly #keepMs: number;

  constructor(opts: { log: Logger; keep?: number; keepMs?: number }) {
    this.#log = opts.log;
    this.#keep = opts.keep ?? KEEP_FINISHED;
    this.#keepMs = opts.keepMs ?? KEEP_FINISHED_MS;
  }

  /**
   * Starts `run` as a job of `kind`. `run` gets a callback for its page walks' progress and
   * answers what the synchronous action would; a FloeError it throws is that error's status and
   * envelope, anything else a logged 500. With `exclusive` (a table's name), a second job with
   * the same key is refused with a 409 naming the running one while the first runs: two
   * drop-damaged-files commits on one table would only race each other's compare-and-swap.
   * While MAX_RUNNING_JOBS run, any other is refused with a 429 naming them.
   */
  start(kind: JobKind, run: (progress: (p: TablePagesProgress) => void) => Promise<AdminAnswer>, exclusive?: string): JobView {
    this.#prune();
    if (exclusive !== undefined) {
      const holder = [...this.#jobs.values()].find((j) => j.exclusive === exclusive && j.view.state === 'running');
      if (holder) throw new FloeError('conflict', `a ${holder.view.kind} job for ${exclusive} is running: ${holder.view.id} (GET /api/v1/ops/jobs/${holder.view.id}); wait for it to finish`, { code: 'FLOE_ERR_OPS_JOB_RUNNING' });
    }
    const running = [...this.#jobs.values()].filter((j) => j.view.state === 'running').map((j) => j.view.id);
    if (running.length >= MAX_RUNNING_JOBS) {
      throw new FloeError('rate_limited', `${running.length} page-check jobs are running on this compactor, the most it runs at once: ${running.join(', ')} (GET /api/v1/ops/jobs/{id}); start this one when one of them has finished`, {
        code: 'FLOE_ERR_OPS_JOBS_BUSY',
      });
    }
    const view: JobView = { id: randomUUID(), kind, state: 'running', started_at: new Date().toISOString(), finished_at: null, progress: emptyProgress() };
    const tables = new Map<string, TablePagesProgress>();
    const progress = (p: TablePagesProgress) => {
      tables.set(p.table, p);
      view.progress = sumProgress(tables.values());
    };
    // Never synchronously: a run that throws at once fails its job like one that throws later.
    const done = Promise.resolve()
      .then(() => run(progress))
      .catch((err: unknown): AdminAnswer => {
        const { status, body, unexpected } = toHttp(err);
        if (unexpected) this.#log.error({ err, job: view.id, kind }, 'maintenance job failed');
        return { status, body };
      })
      .then((result) => {
        view.result = result;
        view.state = result.status < 300 ? 'done' : 'failed';
        view.finished_at = new Date().toISOString();
        delete job.exclusive;
        return result;
      });
    const job: Job = { view, done, ...(exclusive !== undefined ? { exclusive } : {}) };
    this.#jobs.set(view.id, job);
    return view;
  }

  /** The job as it is now, or undefined when unknown (never started here, forgotten, or started before a restart). */
  get(id: string): JobView | undefined {
    this.#prune();
    return this.#jobs.get(id)?.view;
  }

  /** `GET /jobs/{id}`: 200 with the job, or a 404 saying why a job may be unknown. */
  answer(id: string): AdminAnswer {
    const view = this.get(id);
    if (view) return { status: 200, body: view };
    const { status, body } = toHttp(
      new FloeError('not_found', `unknown job ${id}: it finished long ago, or the compactor restarted since it was started (jobs are kept in its memory only); run it again`, { code: 'FLOE_ERR_OPS_NO_JOB' }),
    );
    return { status, body };
  }

  /** The job's result when it finishes within `waitMs`, else the 202 naming it. */
  async wait(view: JobView, waitMs: number): Promise<AdminAnswer> {
    const job = this.#jobs.get(view.id);
    if (!job) throw new Error(`job ${view.id} is not in this registry`);
    if (waitMs > 0 && view.state === 'running') {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([job.done, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
      clearTimeout(timer);
    }
    if (view.result) return view.result;
    const running: JobRunning = { status: 'running', job: { id: view.id, kind: view.kind, state: view.state, started_at: view.started_at, progress: view.progress } };
    return { status: 202, body: running };
  }

  /** Forgets finished jobs past the count or the age kept; a running job is never forgotten. */
  #prune(): void {
    const now = Date.now();
    const finished = [...this.#jobs.values()].filter((j) => j.view.finished_at !== null);
    // Oldest first: the map keeps insertion order, which is start order.
    let over = finished.length - this.#keep;
    for (const j of finished) {
      if (over > 0 || now - Date.parse(j.view.finished_at!) > this.#keepMs) {
        this.#jobs.delete(j.view.id);
        over--;
      }
    }
  }
}

function sumProgress(tables: Iterable<TablePagesProgress>): JobProgress {
  const sum = emptyProgress();
  for (const t of tables) {
    sum.tables++;
    sum.files_checked += t.files_checked;
    sum.files += t.files;
    sum.bytes_checked += t.bytes_checked;
    sum.bytes += t.bytes;
    sum.damaged += t.damaged;
  }
  return sum;
}
