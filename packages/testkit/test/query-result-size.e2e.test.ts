import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { runFloeCli, startFloe, type FloeUnderTest } from '../src/index.ts';

/**
 * Config `querier.max_result_mb`: a result is held whole in the querier until it is sent, outside
 * DuckDB's memory_limit, so one query asking for gigabytes (`repeat(…)` over many rows) could take
 * the process, and every tenant's queries, down. Past the cap it is refused with a client error
 * naming the limit, and the querier answers the next query. `querier.max_result_rows` cuts a
 * result, and the cut is marked in the Arrow schema and warned of by `floe sql`.
 */
describe('query result limits: querier.max_result_mb and querier.max_result_rows', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'bigresult';

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { querier: { max_result_mb: 1, max_result_rows: 100 } } });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  it('marks a result cut at max_result_rows in its schema, and `floe sql` warns on stderr', async () => {
    const metadata = { authorization: `Bearer ${key}`, 'x-tenant-id': tenant };
    const cut = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from('SELECT range AS n FROM range(500)'), metadata, deadlineMs: 20_000 });
    expect(cut.numRows).toBe(100);
    expect(cut.schema.metadata.get('floe.truncated_at_rows')).toBe('100');
    const whole = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from('SELECT range AS n FROM range(100)'), metadata, deadlineMs: 20_000 });
    expect([whole.numRows, whole.schema.metadata.size]).toEqual([100, 0]);
    const cli = await runFloeCli(['sql', '--json', '--url', floe.flightAddress, 'SELECT range AS n FROM range(500)'], { FLOE_API_KEY: key, FLOE_TENANT: tenant });
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout)).toHaveLength(100);
    expect(cli.stderr).toBe('floe sql: warning: the result was cut at 100 rows (querier.max_result_rows); narrow the query or add a LIMIT\n');
  });

  const message = 'the result is larger than the 1 MiB a query may return (querier.max_result_mb); select fewer rows or columns, or aggregate';

  it('is INVALID_ARGUMENT over Flight with the limit named, and the next query answers', async () => {
    const metadata = { authorization: `Bearer ${key}`, 'x-tenant-id': tenant };
    const ask = (sql: string) => flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(sql), metadata, deadlineMs: 20_000 });
    await expect(ask("SELECT repeat('x', 20000) AS v FROM range(99)")).rejects.toMatchObject({ code: 3, details: message });
    const small = await ask("SELECT repeat('x', 10000) AS v FROM range(50)");
    expect(small.numRows).toBe(50);
  });

  it('fails `floe sql` with the message and a non-zero exit', async () => {
    const cli = await runFloeCli(['sql', '--json', '--url', floe.flightAddress, "SELECT repeat('x', 100000) AS v FROM range(100)"], { FLOE_API_KEY: key, FLOE_TENANT: tenant });
    expect(cli.code).not.toBe(0);
    expect(cli.stdout).toBe('');
    expect(cli.stderr).toContain(message);
  });
});
