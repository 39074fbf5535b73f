import type { FloeConfig } from '@floe/config';
import { enabledTables, provisionDataset, type SqlCatalog } from '@floe/iceberg';
import { listDatasets, listTenants, withDefaultDataset, type Db } from '@floe/meta';
import { sleep } from '@floe/runtime';
import type { Logger } from '@floe/telemetry';
import { datasetAttributes, type WriterMetrics } from './writer-metrics.ts';

export interface ReconcileStats {
  datasets_checked: number;
  datasets_skipped: number;
  tables_created: number;
  tables_failed: number;
}

export interface ReconcilerDeps {
  db: Db;
  catalog: SqlCatalog;
  defaults: FloeConfig['schema']['default_schemas'];
  log: Logger;
  /** Self-monitoring instruments (none: not recorded). */
  metrics?: WriterMetrics;
}

/**
 * The writer's table reconcile pass (spec 2, provisioning rule 2): every tenant of the registry,
 * every dataset of each (the default one included), every enabled table loaded or created and
 * brought to the current definition, legacy tables dropped or recreated. A dataset whose tables
 * all converged is remembered for the life of the process and skipped (rule 6); failures are
 * logged per table and retried on the next pass (rule 5).
 */
export class TableReconciler {
  readonly #o: ReconcilerDeps;
  readonly #converged = new Set<string>();

  constructor(deps: ReconcilerDeps) {
    this.#o = deps;
  }

  async pass(): Promise<ReconcileStats> {
    const { db, catalog, defaults, log } = this.#o;
    const stats: ReconcileStats = { datasets_checked: 0, datasets_skipped: 0, tables_created: 0, tables_failed: 0 };
    for (const tenant of await listTenants(db)) {
      const tables = enabledTables(defaults, tenant.settings);
      for (const ds of withDefaultDataset(tenant, await listDatasets(db, tenant.id))) {
        // The table set is part of the key: enabling a signal later makes the dataset unconverged.
        const key = `${tenant.id}\u0000${ds.id}\u0000${tables.join(',')}`;
        if (this.#converged.has(key)) {
          stats.datasets_skipped++;
          continue;
        }
        stats.datasets_checked++;
        const result = await provisionDataset(catalog, tenant.id, ds.id, tables, log);
        const failed = result.tables.filter((t) => t.outcome === 'failed').length;
        const created = result.tables.filter((t) => t.outcome === 'created' || t.outcome === 'recreated').length;
        stats.tables_created += created;
        stats.tables_failed += failed;
        if (created > 0) this.#o.metrics?.tablesProvisioned.add(created, datasetAttributes(tenant.id, ds.id));
        if (failed > 0) this.#o.metrics?.tableProvisioningFailures.add(failed, datasetAttributes(tenant.id, ds.id));
        if (failed === 0) this.#converged.add(key);
      }
    }
    if (stats.tables_created > 0 || stats.tables_failed > 0) log.info(stats, 'table reconcile pass');
    return stats;
  }
}

/**
 * The reconcile schedule (writer.table_reconcile_interval): a pass at start, then one every
 * `intervalMs` until `signal` aborts. An interval of 0 keeps only the startup pass: the returned
 * promise then settles after it, with no pass left to come. A failed pass is logged, never fatal.
 */
export async function runReconcileLoop(reconciler: Pick<TableReconciler, 'pass'>, intervalMs: number, signal: AbortSignal, log: Logger): Promise<void> {
  do {
    try {
      await reconciler.pass();
    } catch (err) {
      log.warn({ err }, 'table reconcile pass failed; retrying at the next interval');
    }
    if (intervalMs <= 0) return;
    await sleep(intervalMs, signal);
  } while (!signal.aborted);
}
