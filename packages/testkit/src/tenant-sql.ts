import { flightDoGet } from '@floe/flight';
import { plain } from './plain.ts';
import { waitFor } from './ports.ts';

export type SqlRow = Record<string, unknown>;

/**
 * SQL over Flight as one tenant, rows as plain objects (the address and credentials are read at
 * each call, so a suite can make this before its Floe starts); and `rowsOf`, which waits until a
 * query gives at least `want` rows (data becomes queryable only after the writer's next commit).
 */
export function tenantSql(flightAddress: () => string, metadata: () => Record<string, string>) {
  const sql = async (text: string): Promise<SqlRow[]> => {
    const table = await flightDoGet({ url: flightAddress(), ticket: Buffer.from(text), metadata: metadata(), deadlineMs: 20_000 });
    return table.toArray().map((r) => plain(r) as SqlRow);
  };
  const rowsOf = (what: string, text: string, want = 1) =>
    waitFor(what, async () => {
      const rows = await sql(text);
      return rows.length >= want ? rows : undefined;
    });
  return { sql, rowsOf };
}
