import type { FloeConfig } from '@floe/config';
import { openDb, type Db } from './db.ts';

/** Opens the metadata DB the `meta` config section describes (PGlite dir or a PostgreSQL URL). */
export function openDbFromConfig(config: { meta: FloeConfig['meta'] }): Promise<Db> {
  const m = config.meta;
  return m.kind === 'pg' ? openDb({ kind: 'pg', url: m.url, poolMax: m.pool_max }) : openDb({ kind: 'pglite', dataDir: m.data_dir });
}
