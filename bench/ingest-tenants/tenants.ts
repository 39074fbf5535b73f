import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';

/** A tenant made for the bench and its ingest + query key. */
export interface BenchTenant {
  id: string;
  key: string;
  /** The headers an ingest request or a query of this tenant carries. */
  auth: Record<string, string>;
}

const FLOE = join(resolve(import.meta.dirname, '../..'), 'packages/cli/bin/floe.js');

/**
 * Creates `count` tenants `<prefix>-<i>` through the router's management API as an instance admin
 * (`auth.admin_api_key`), as an operator's provisioning would: POST /api/v1/tenants (which also
 * provisions the default dataset's tables) and one key with `ingest` and `query` each.
 * `parallel` requests at a time: the embedded metadata DB serializes them anyway.
 */
export async function createTenants(routerUrl: string, adminKey: string, prefix: string, count: number, parallel = 4): Promise<BenchTenant[]> {
  const headers = { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' };
  const post = async (path: string, body: unknown): Promise<unknown> => {
    const res = await fetch(`${routerUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    const answer = await res.text();
    if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${answer.slice(0, 300)}`);
    return JSON.parse(answer);
  };
  const out: BenchTenant[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, count) }, async () => {
      for (let i = next++; i < count; i = next++) {
        const id = `${prefix}-${i}`;
        await post('/api/v1/tenants', { id });
        const { secret } = (await post(`/api/v1/tenants/${id}/api-keys`, { name: 'bench', scopes: ['ingest', 'query'] })) as { secret: string };
        out[i] = { id, key: secret, auth: { authorization: `Bearer ${secret}`, 'x-tenant-id': id } };
      }
    }),
  );
  return out;
}

/**
 * Seconds one `floe admin bootstrap` takes against the running instance (a Node start, then the
 * router's /api/v1/admin/bootstrap through the local token): what N tenants by the CLI would cost.
 */
export function cliBootstrapSeconds(configFile: string, tenant: string): number {
  const started = performance.now();
  const boot = spawnSync(process.execPath, [FLOE, 'admin', 'bootstrap', '--tenant', tenant, '--json', '--config', configFile], { encoding: 'utf8' });
  if (boot.status !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
  return (performance.now() - started) / 1000;
}
