import { flightDoGet } from '@floe/flight';
import type { FloeUnderTest } from './floe.ts';
import { traceSpanCount } from './otel.ts';
import { waitFor } from './ports.ts';

/**
 * How a sent trace reads back: the spans the router's trace-by-id answers once it answers all
 * `spans` of them (waiting up to 30 s), and the rows SQL over Flight counts for it then.
 */
export async function traceReadBack(floe: FloeUnderTest, traceId: string, headers: Record<string, string>, spans = 3): Promise<{ router: number; flight: number }> {
  const body = await waitFor(`trace ${traceId}`, async () => {
    const res = await fetch(`${floe.routerUrl}/tracequery/api/traces/${traceId}`, { headers });
    if (res.status !== 200) return undefined;
    const json = (await res.json()) as Parameters<typeof traceSpanCount>[0];
    return traceSpanCount(json) === spans ? json : undefined;
  }, 30_000, 200);
  const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(`SELECT count(*) AS n FROM traces WHERE trace_id = '${traceId}'`), metadata: headers, deadlineMs: 20_000 });
  return { router: traceSpanCount(body), flight: Number(table.getChildAt(0)!.get(0)) };
}

/** Host and port of `host:port` or a URL (http, https, grpc+tls, …). */
export function hostPort(url: string): { host: string; port: number } {
  const m = /^(?:[a-z+]+:\/\/)?([^:/]+):(\d+)/.exec(url);
  if (!m) throw new Error(`no host:port in ${url}`);
  return { host: m[1]!, port: Number(m[2]) };
}
