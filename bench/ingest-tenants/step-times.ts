/**
 * Diagnostic preload for a bench's `floe all`: where a writer round's wall time goes. Wraps the
 * methods a round awaits (the Iceberg catalog's, the object store's, the Parquet writer's) and
 * adds up each one's wall time, by call path, inside each
 * Committer.round() (AsyncLocalStorage tells the writer's calls from the router's or the
 * compactor's). After every round it rewrites <FLOE_STEP_TIMES>/steps-<pid>.json: one entry per
 * round with its duration, commits and the milliseconds of each path (nested paths are included
 * in their parents: `appendFiles>put` is part of `appendFiles`).
 *
 *   FLOE_STEP_TIMES=/tmp/steps FLOE_BENCH_NODE_ARGS="--import $PWD/bench/ingest-tenants/step-times.ts" \
 *     node bench/ingest-tenants/run.ts 30 200
 *   node bench/ingest-tenants/step-summary.ts /tmp/steps/steps-<pid>.json
 *
 * Wall time, not CPU: a step awaiting an fsync, the encoding thread or a turn of the event loop
 * behind the acceptor's requests counts its wait; with writer.commit_concurrency above 1 the
 * tables' steps overlap, so their sum exceeds the round's time (measured with it at 1). Not for
 * the figures a bench reports.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SqlCatalog } from '@floe/iceberg';
import { FsObjectStore, ParquetWriter } from '@floe/storage';
import { Committer } from '@floe/writer';

/** One writer round as recorded (step-summary.ts prints them). */
export interface RoundTimes {
  at: string;
  ms: number;
  commits: number;
  rows: number;
  steps: Record<string, { calls: number; ms: number }>;
}

const dir = process.env.FLOE_STEP_TIMES;
if (dir) {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `steps-${process.pid}.json`);
  const rounds: RoundTimes[] = [];
  const als = new AsyncLocalStorage<{ path: string; steps: RoundTimes['steps'] }>();

  type Method = (...args: unknown[]) => unknown;
  const wrap = (proto: object, names: readonly string[]) => {
    for (const name of names) {
      const orig = (proto as Record<string, Method>)[name];
      if (typeof orig !== 'function') throw new Error(`step-times: no method ${name}`);
      (proto as Record<string, Method>)[name] = function (this: unknown, ...args: unknown[]) {
        const ctx = als.getStore();
        if (!ctx) return orig.apply(this, args);
        const path = ctx.path ? `${ctx.path}>${name}` : name;
        const started = performance.now();
        const done = () => {
          const s = (ctx.steps[path] ??= { calls: 0, ms: 0 });
          s.calls++;
          s.ms += performance.now() - started;
        };
        const out = als.run({ path, steps: ctx.steps }, () => orig.apply(this, args));
        if (out instanceof Promise) return out.finally(done);
        done();
        return out;
      };
    }
  };

  wrap(SqlCatalog.prototype, ['loadTable', 'createTable', 'createNamespace', 'appendFiles', 'pointerOf', 'listTables', 'updateSchema', 'setProperties']);
  wrap(FsObjectStore.prototype, ['put', 'putFile', 'putIfAbsent', 'get', 'getRange', 'head', 'list', 'delete', 'deleteMany']);
  wrap(ParquetWriter.prototype, ['write']);

  const round = Committer.prototype.round;
  Committer.prototype.round = function (this: Committer, ...args: Parameters<typeof round>) {
    const steps: RoundTimes['steps'] = {};
    const started = performance.now();
    const at = new Date().toISOString();
    return als.run({ path: '', steps }, () => round.apply(this, args)).then((stats) => {
      rounds.push({ at, ms: performance.now() - started, commits: stats.commits, rows: stats.rows, steps });
      writeFileSync(file, JSON.stringify(rounds));
      return stats;
    });
  };
}
