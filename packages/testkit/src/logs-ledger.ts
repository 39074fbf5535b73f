import { tenantSql } from './tenant-sql.ts';
import { waitFor } from './ports.ts';

/**
 * For suites that count every acknowledged log record stored exactly once (a table held and
 * repaired, several acceptors): `post` sends `n` OTLP/JSON log records whose bodies are unique to
 * `tag` as a tenant to an acceptor; `stored` reads the tenant's rows and distinct bodies over SQL
 * (equal when nothing was stored twice); `waitStored` waits for at least `rows` of them. The
 * address and credentials are read at each call, so a suite can make this before its Floe starts.
 */
export function logsLedger(flightAddress: () => string, headers: (tenant: string) => Record<string, string>) {
  const post = (acceptorUrl: string, tenant: string, n: number, tag: string) => {
    const nowNs = String(BigInt(Date.now()) * 1_000_000n);
    const body = JSON.stringify({
      resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'svc' } }] }, scopeLogs: [{ logRecords: Array.from({ length: n }, (_, i) => ({ timeUnixNano: nowNs, body: { stringValue: `${tag} ${i} ${'x'.repeat(40)}` } })) }] }],
    });
    return fetch(`${acceptorUrl}/v1/logs`, { method: 'POST', headers: { ...headers(tenant), 'content-type': 'application/json' }, body });
  };
  const stored = async (tenant: string) => {
    const [row] = await tenantSql(flightAddress, () => headers(tenant)).sql('SELECT count(*) AS n, count(DISTINCT body) AS d FROM logs');
    return { rows: Number(row!.n), distinct: Number(row!.d) };
  };
  const waitStored = (tenant: string, rows: number) => waitFor(`${rows} rows of ${tenant}`, async () => ((await stored(tenant)).rows >= rows ? stored(tenant) : undefined), 90_000, 200);
  return { post, stored, waitStored };
}
