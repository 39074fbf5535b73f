import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '@floe/config';
import { FloeError, toHttp } from '@floe/errors';
import type { ServiceHandle } from '@floe/runtime';
import type { ObjectStore } from '@floe/storage';
import { silentLogger } from '@floe/telemetry';
import { MAX_RUNNING_JOBS, MaintenanceJobs, type JobView } from './maintenance-jobs.ts';
import { start } from './start.ts';
import { tableHelpers } from './table-fixture.ts';
import { openFixture, type Fixture } from './test-support.ts';

/** A promise the test settles: a job's run held until the test lets it go. */
function held<T>(): { promise: Promise<T>; resolve(v: T): void; reject(e: unknown): void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const progressOf = (table: string, files_checked: number, files: number, damaged = 0) => ({ table, files_checked, files, bytes_checked: files_checked * 10, bytes: files * 10, damaged });

describe('MaintenanceJobs', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("answers a job's result when it finishes within the wait, else a 202 naming it; the job then answers its progress, and its result once done", async () => {
    const jobs = new MaintenanceJobs({ log: silentLogger() });
    const quick = jobs.start('check_tables', async () => ({ status: 200, body: { tables_checked: 0 } }));
    expect(await jobs.wait(quick, 5_000)).toEqual({ status: 200, body: { tables_checked: 0 } });

    const run = held<{ status: number; body: unknown }>();
    let report!: (p: ReturnType<typeof progressOf>) => void;
    const slow = jobs.start('drop_damaged_files', async (progress) => {
      report = progress;
      return run.promise;
    });
    const waiting = await jobs.wait(slow, 0);
    expect(waiting).toEqual({
      status: 202,
      body: { status: 'running', job: { id: slow.id, kind: 'drop_damaged_files', state: 'running', started_at: slow.started_at, progress: { tables: 0, files_checked: 0, files: 0, bytes_checked: 0, bytes: 0, damaged: 0 } } },
    });
    // Progress of two tables' walks, summed; a table's later report replaces its earlier one.
    report(progressOf('t/a', 1, 4));
    report(progressOf('t/b', 0, 2));
    report(progressOf('t/a', 3, 4, 1));
    expect(jobs.answer(slow.id)).toEqual({ status: 200, body: { ...slow, state: 'running', finished_at: null, progress: { tables: 2, files_checked: 3, files: 6, bytes_checked: 30, bytes: 60, damaged: 1 } } });
    run.resolve({ status: 200, body: { dropped: true } });
    expect(await jobs.wait(slow, 5_000)).toEqual({ status: 200, body: { dropped: true } });
    expect(jobs.answer(slow.id).body).toMatchObject({ id: slow.id, state: 'done', finished_at: expect.any(String), result: { status: 200, body: { dropped: true } } });
  });

  it("fails a job whose run throws: a FloeError's status and envelope, anything else a 500 envelope whose detail goes to the log only", async () => {
    const log = silentLogger();
    const logged = vi.spyOn(log, 'error');
    const jobs = new MaintenanceJobs({ log });
    const missing = jobs.start('drop_damaged_files', async () => {
      throw new FloeError('not_found', 'no table x.default.traces');
    });
    expect(await jobs.wait(missing, 5_000)).toEqual({ status: 404, body: { status: 'error', errorType: 'not_found', error: 'no table x.default.traces' } });
    expect(jobs.get(missing.id)).toMatchObject({ state: 'failed', result: { status: 404 } });
    expect(logged).not.toHaveBeenCalled();

    const broken = jobs.start('check_tables', async () => {
      throw new Error('secret detail');
    });
    const answer = await jobs.wait(broken, 5_000);
    expect(answer.status).toBe(500);
    expect(answer.body).toMatchObject({ status: 'error', errorType: 'internal' });
    expect(JSON.stringify(answer.body)).not.toContain('secret detail');
    expect(jobs.get(broken.id)?.state).toBe('failed');
    expect(logged).toHaveBeenCalledTimes(1);
  });

  it('refuses a second job holding the same table while the first runs (409 naming it), not one of another table, and takes one again once it finished', async () => {
    const jobs = new MaintenanceJobs({ log: silentLogger() });
    const run = held<{ status: number; body: unknown }>();
    const first = jobs.start('drop_damaged_files', () => run.promise, 'a.default.logs');
    let refused: unknown;
    try {
      jobs.start('drop_damaged_files', async () => ({ status: 200, body: {} }), 'a.default.logs');
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(FloeError);
    expect(refused).toMatchObject({ kind: 'conflict', message: expect.stringContaining(`a drop_damaged_files job for a.default.logs is running: ${first.id}`) });
    // One at a time beside the held one: a third running at once would be past MAX_RUNNING_JOBS.
    const other = jobs.start('drop_damaged_files', async () => ({ status: 200, body: {} }), 'a.default.traces');
    expect((await jobs.wait(other, 5_000)).status).toBe(200);
    const unheld = jobs.start('drop_damaged_files', async () => ({ status: 200, body: {} }));
    expect((await jobs.wait(unheld, 5_000)).status).toBe(200);
    // A failed run lets go of its table too.
    run.reject(new FloeError('conflict', 'moved meanwhile'));
    expect((await jobs.wait(first, 5_000)).status).toBe(409);
    const again = jobs.start('drop_damaged_files', async () => ({ status: 200, body: {} }), 'a.default.logs');
    expect((await jobs.wait(again, 5_000)).status).toBe(200);
  });

  it(`runs at most ${MAX_RUNNING_JOBS} jobs at once: another is refused with a 429 naming the running ones, and starts once one of them finished`, async () => {
    expect(MAX_RUNNING_JOBS).toBe(2);
    const jobs = new MaintenanceJobs({ log: silentLogger() });
    const runs = [held<{ status: number; body: unknown }>(), held<{ status: number; body: unknown }>()];
    const first = jobs.start('check_tables', () => runs[0]!.promise);
    const second = jobs.start('drop_damaged_files', () => runs[1]!.promise, 'a.default.logs');
    const third = () => jobs.start('check_tables', async () => ({ status: 200, body: { third: true } }));
    let refused: unknown;
    try {
      third();
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(FloeError);
    expect(toHttp(refused)).toEqual({
      status: 429,
      headers: {},
      body: {
        status: 'error',
        errorType: 'rate_limited',
        error: `2 page-check jobs are running on this compactor, the most it runs at once: ${first.id}, ${second.id} (GET /api/v1/ops/jobs/{id}); start this one when one of them has finished`,
      },
      unexpected: false,
    });
    // A job that failed frees its place as one that succeeded does.
    runs[1]!.reject(new FloeError('conflict', 'moved meanwhile'));
    expect((await jobs.wait(second, 5_000)).status).toBe(409);
    const later = third();
    expect(await jobs.wait(later, 5_000)).toEqual({ status: 200, body: { third: true } });
    runs[0]!.resolve({ status: 200, body: {} });
    expect((await jobs.wait(first, 5_000)).status).toBe(200);
  });

  it('keeps the latest finished jobs up to its count and age, never a running one; an unknown job is a 404 saying why', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const jobs = new MaintenanceJobs({ log: silentLogger(), keep: 2, keepMs: 60_000 });
    const run = held<{ status: number; body: unknown }>();
    const running = jobs.start('check_tables', () => run.promise);
    const finished: JobView[] = [];
    for (let i = 0; i < 3; i++) {
      const j = jobs.start('check_tables', async () => ({ status: 200, body: { i } }));
      await jobs.wait(j, 5_000);
      finished.push(j);
    }
    // The oldest finished one is past the count.
    expect(finished.map((j) => jobs.answer(j.id).status)).toEqual([404, 200, 200]);
    expect(jobs.answer(finished[0]!.id).body).toEqual({
      status: 'error',
      errorType: 'not_found',
      error: `unknown job ${finished[0]!.id}: it finished long ago, or the compactor restarted since it was started (jobs are kept in its memory only); run it again`,
    });
    // An hour later only the running one is left, and it still answers once done.
    vi.setSystemTime(Date.now() + 61_000);
    expect([running, ...finished].map((j) => jobs.answer(j.id).status)).toEqual([200, 404, 404, 404]);
    run.resolve({ status: 200, body: {} });
    expect(await jobs.wait(running, 5_000)).toEqual({ status: 200, body: {} });
    expect(jobs.get(running.id)?.state).toBe('done');
  });
});

describe("the compactor's page-check jobs (pglite catalog, fs store, over HTTP)", () => {
  let f: Fixture;
  let svc: ServiceHandle;
  /** Reads of the tables of tenant jobs-held wait while a gate is up: their jobs stay running until the test lets them go. */
  let gate: Promise<void> | undefined;
  const raiseGate = () => {
    const g = held<void>();
    gate = g.promise;
    return () => {
      gate = undefined;
      g.resolve();
    };
  };
  const { table, appendBatchFile, flipInPage } = tableHelpers(() => f);
  let bad: string;

  beforeAll(async () => {
    f = await openFixture('pglite');
    let handle = (await table('jobs-held', 0)).versions[0]!;
    const keys: string[] = [];
    for (const seed of [601, 602, 603]) {
      const r = await appendBatchFile(handle, 10, seed);
      handle = r.handle;
      keys.push(r.key);
    }
    bad = keys[1]!;
    await flipInPage(bad);
    const gated = new Proxy(f.store, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target) as unknown;
        if (typeof v !== 'function') return v;
        if (prop !== 'getRange') return (v as (...a: unknown[]) => unknown).bind(target);
        return async (key: string, ...rest: unknown[]) => {
          if (gate && key.includes('/jobs-held/')) await gate;
          return (v as (...a: unknown[]) => unknown).call(target, key, ...rest);
        };
      },
    }) as ObjectStore;
    const config = loadConfig({ env: {}, overrides: { log: { level: 'silent' }, compactor: { host: '127.0.0.1', admin_port: 0, enabled: false, work_dir: join(f.dir, 'compactor') } } });
    svc = await start(config, { log: silentLogger(), db: f.db, store: gated });
  });
  afterAll(async () => {
    await svc?.stop();
    await f?.close();
  });

  const call = async (method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const res = await fetch(`http://127.0.0.1:${svc.ports.admin}${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: res.status, body: await res.json() };
  };
  const heldTable = { tenant: 'jobs-held', dataset: 'default', table: 'traces' };
  /** GET /jobs/{id} until the job is no longer running (or `until` holds of it). */
  const poll = async (id: string, until: (job: JobView) => boolean = (j) => j.state !== 'running'): Promise<JobView> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const { status, body } = await call('GET', `/jobs/${id}`);
      expect(status).toBe(200);
      if (until(body as JobView) || Date.now() > deadline) return body as JobView;
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  it('a check with check_pages and wait_ms 0 answers 202 with its job, whose progress shows and which ends done with the body the synchronous call answers', async () => {
    const lower = raiseGate();
    const started = await call('POST', '/tables/check', { tenant: 'jobs-held', check_pages: true, wait_ms: 0 });
    expect(started).toEqual({
      status: 202,
      body: { status: 'running', job: { id: expect.stringMatching(/^[0-9a-f-]{36}$/), kind: 'check_tables', state: 'running', started_at: expect.any(String), progress: expect.any(Object) } },
    });
    const id = started.body.job.id as string;
    // Its reads are held: the walk has begun on the table's three files and read none whole.
    const walking = await poll(id, (j) => j.progress.files === 3);
    expect(walking).toMatchObject({ id, state: 'running', finished_at: null, progress: { tables: 1, files_checked: 0, files: 3, damaged: 0 } });
    expect(walking.result).toBeUndefined();
    lower();
    const done = await poll(id);
    const sync = await call('POST', '/tables/check', { tenant: 'jobs-held', check_pages: true });
    expect(sync.status).toBe(200);
    expect(sync.body.tables[0]).toMatchObject({ status: 'damaged', problems: [{ kind: 'data_files_damaged_pages', keys: [bad] }], pages_checked: { files: 3 } });
    expect(done).toMatchObject({ id, kind: 'check_tables', state: 'done', finished_at: expect.any(String), progress: { tables: 1, files_checked: 3, files: 3, damaged: 1 } });
    expect(done.result).toEqual({ status: 200, body: sync.body });
    // Without check_pages nothing is a job, whatever wait_ms says.
    const plain = await call('POST', '/tables/check', { tenant: 'jobs-held', wait_ms: 0 });
    expect([plain.status, plain.body.tables[0].status]).toEqual([200, 'ok']);
  });

  it('a drop with check_pages on an unknown table is a job that ends failed with the 404 the synchronous call answers', async () => {
    const unknown = { tenant: 'jobs-none', dataset: 'default', table: 'traces', check_pages: true };
    const notFound = { status: 404, body: { status: 'error', errorType: 'not_found', error: 'no table jobs-none.default.traces' } };
    const started = await call('POST', '/tables/drop-damaged-files', { ...unknown, wait_ms: 0 });
    expect(started.status).toBe(202);
    expect(started.body.job.kind).toBe('drop_damaged_files');
    expect(await poll(started.body.job.id)).toMatchObject({ state: 'failed', result: notFound });
    expect(await call('POST', '/tables/drop-damaged-files', unknown)).toEqual(notFound);
  });

  it('an unknown job is a 404 saying it may be forgotten or lost to a restart; a bad wait_ms is a 400', async () => {
    const id = '0b5c6a57-9a39-4f7e-8f4c-3a0b1f1e2d3c';
    expect(await call('GET', `/jobs/${id}`)).toEqual({
      status: 404,
      body: { status: 'error', errorType: 'not_found', error: `unknown job ${id}: it finished long ago, or the compactor restarted since it was started (jobs are kept in its memory only); run it again` },
    });
    for (const wait_ms of [-1, 60_001, 1.5, '10']) {
      expect((await call('POST', '/tables/check', { check_pages: true, wait_ms })).status).toBe(400);
      expect((await call('POST', '/tables/drop-damaged-files', { ...heldTable, check_pages: true, wait_ms })).status).toBe(400);
    }
  });

  it('refuses a second drop of the same table while the first runs (409 naming it), lets a dry run run beside it, refuses a third job (429 naming both), and the first drops the damaged file', async () => {
    const lower = raiseGate();
    const first = await call('POST', '/tables/drop-damaged-files', { ...heldTable, check_pages: true, wait_ms: 0 });
    expect(first.status).toBe(202);
    const id = first.body.job.id as string;
    const second = await call('POST', '/tables/drop-damaged-files', { ...heldTable, check_pages: true, wait_ms: 0 });
    expect(second).toEqual({ status: 409, body: { status: 'error', errorType: 'conflict', error: expect.stringContaining(`a drop_damaged_files job for jobs-held.default.traces is running: ${id}`) } });
    const dry = await call('POST', '/tables/drop-damaged-files', { ...heldTable, check_pages: true, dry_run: true, wait_ms: 0 });
    expect(dry.status).toBe(202);
    const busy = await call('POST', '/tables/check', { tenant: 'jobs-held', check_pages: true, wait_ms: 0 });
    expect(busy).toEqual({ status: 429, body: { status: 'error', errorType: 'rate_limited', error: expect.stringContaining(`2 page-check jobs are running on this compactor, the most it runs at once: ${id}, ${dry.body.job.id}`) } });
    lower();
    const done = await poll(id);
    expect(done).toMatchObject({ state: 'done', result: { status: 200, body: { table: 'jobs-held.default.traces', dropped: true, files: [{ key: bad, reason: 'damaged_pages' }], records_given_up: 10 } } });
    expect((await poll(dry.body.job.id)).result).toMatchObject({ status: 200, body: { dry_run: true, files: [{ key: bad }] } });
    // The table is sound now, and a drop takes its table again: nothing left to do.
    expect(await call('POST', '/tables/drop-damaged-files', { ...heldTable, check_pages: true })).toMatchObject({ status: 200, body: { dropped: false, files: [], pages_checked: { files: 2 } } });
  });
});
