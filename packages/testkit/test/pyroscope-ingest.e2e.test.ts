import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { goCpuPprof, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Pyroscope's HTTP ingest API (`POST /ingest`, what Pyroscope's Python, Ruby, .NET and Rust SDKs
 * and pyroscope-cli send) end to end, in both modes: folded CPU ticks, `lines` goroutine stacks
 * and a Go SDK's multipart pprof come back from the profile query API under the name's service,
 * kind and labels, with the tenant named by X-Scope-OrgID as those SDKs name it; formats Floe
 * does not take and broken bodies get 4xx with the shared error body; another tenant sees nothing.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('Pyroscope /ingest (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  let otherKey: string;
  const nowS = Math.floor(Date.now() / 1000);
  const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';

  const ingest = (params: Record<string, string>, body: string | Uint8Array | FormData, headers: Record<string, string> = {}, k: string | null = key) =>
    fetch(`${floe.otlpHttpUrl}/ingest?${new URLSearchParams(params)}`, {
      method: 'POST',
      body,
      headers: { 'x-scope-orgid': 'acme', ...(k === null ? {} : { authorization: `Bearer ${k}` }), ...headers },
    });
  const window = { from: String(nowS - 10), until: String(nowS) };
  const render = async (query: string, tenant = 'acme', k = key) => {
    const qs = new URLSearchParams({ query, from: String((nowS - 120) * 1000), until: String((nowS + 60) * 1000) });
    const res = await fetch(`${floe.routerUrl}/profilequery/render?${qs}`, { headers: { authorization: `Bearer ${k}`, 'x-tenant-id': tenant } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { flamebearer: { names: string[]; numTicks: number } }).flamebearer;
  };

  beforeAll(async () => {
    floe = await startFloe({ mode });
    key = (await floe.bootstrap('acme')).api_key;
    otherKey = (await floe.bootstrap('globex')).api_key;
  }, 180_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('stores folded CPU ticks as nanoseconds of process_cpu under the name\'s service and labels', async () => {
    const res = await ingest({ name: 'legacy.py.cpu{env=prod,region=eu}', ...window, sampleRate: '100', spyName: 'pyspy', format: 'folded' }, 'main.py:<module>;app.py:work 3\nmain.py:<module> 1\n');
    expect(res.status).toBe(200);
    const fb = await waitFor('the folded profile', async () => {
      const f = await render(`${CPU}{service_name="legacy.py"}`);
      return f.numTicks > 0 ? f : undefined;
    }, 30_000, 250);
    // 4 ticks at 100 Hz: 40 ms.
    expect(fb.numTicks).toBe(40_000_000);
    expect(fb.names).toEqual(expect.arrayContaining(['total', 'main.py:<module>', 'app.py:work']));
    expect((await render(`${CPU}{service_name="legacy.py", env="prod", region="eu", pyroscope_spy="pyspy"}`)).numTicks).toBe(40_000_000);
    expect((await render(`${CPU}{service_name="legacy.py", env="dev"}`)).numTicks).toBe(0);
    expect((await render(`${CPU}{service_name="legacy.py"}`, 'globex', otherKey)).numTicks).toBe(0);
  });

  it('takes one stack per line (format=lines) and names the profile type by the kind', async () => {
    const res = await ingest({ name: 'legacy-rb.goroutines', ...window, format: 'lines' }, 'main;sleep\nmain;sleep\nmain;serve\n', { 'content-type': 'text/plain' });
    expect(res.status).toBe(200);
    const fb = await waitFor('the goroutine stacks', async () => {
      const f = await render('goroutines:goroutine:count:goroutine:count{service_name="legacy-rb"}');
      return f.numTicks > 0 ? f : undefined;
    }, 30_000, 250);
    expect(fb.numTicks).toBe(3);
    expect(fb.names).toEqual(expect.arrayContaining(['main', 'sleep', 'serve']));
  });

  it('takes pprof as a multipart form\'s profile part, gzip-compressed, as the Go SDK sends it', async () => {
    const form = new FormData();
    form.set('profile', new Blob([gzipSync(goCpuPprof())]), 'profile.pprof');
    form.set('sample_type_config', new Blob([JSON.stringify({ cpu: { units: 'samples', 'display-name': 'cpu' } })]), 'sample_type_config.json');
    const res = await ingest({ name: 'legacy-go.cpu{env=prod}', ...window, spyName: 'gospy', format: 'pprof' }, form);
    expect(res.status).toBe(200);
    const fb = await waitFor('the pprof profile', async () => {
      const f = await render(`${CPU}{service_name="legacy-go"}`);
      return f.numTicks > 0 ? f : undefined;
    }, 30_000, 250);
    expect(fb.numTicks).toBe(40_000_000);
    expect(fb.names).toEqual(expect.arrayContaining(['main.main', 'main.work']));
    expect((await render('process_cpu:samples:count:cpu:nanoseconds{service_name="legacy-go"}')).numTicks).toBe(4);
  });

  it('the same body under another name is another profile, not a resend', async () => {
    const body = 'main;loop 2\n';
    for (const app of ['twin-a', 'twin-b']) expect((await ingest({ name: `${app}.cpu`, ...window }, body)).status).toBe(200);
    for (const app of ['twin-a', 'twin-b']) {
      const fb = await waitFor(`the profile of ${app}`, async () => {
        const f = await render(`${CPU}{service_name="${app}"}`);
        return f.numTicks > 0 ? f : undefined;
      }, 30_000, 250);
      expect(fb.numTicks).toBe(20_000_000);
    }
  });

  it("takes the Java agent's JFR recordings (format=jfr, the form's jfr part): execution samples as CPU, allocation samples as memory", async () => {
    // A JDK 17 recording and the JDK's own reading of it (services/acceptor/test/fixtures/jfr).
    const fixtures = new URL('../../../services/acceptor/test/fixtures/jfr/', import.meta.url);
    const recording = readFileSync(new URL('cpu-alloc.jfr', fixtures));
    const expected = JSON.parse(readFileSync(new URL('cpu-alloc.expected.json', fixtures), 'utf8')) as { executionSample: { count: number }; objectAllocationSample: { totalWeight: number } };
    const form = new FormData();
    form.set('jfr', new Blob([recording]), 'jfr');
    const res = await ingest({ name: 'java.shop{env=prod}', ...window, format: 'jfr', sampleRate: '100', spyName: 'javaspy' }, form);
    expect(res.status).toBe(200);
    const cpu = await waitFor('the JFR CPU profile', async () => {
      const f = await render(`${CPU}{service_name="java.shop", env="prod"}`);
      return f.numTicks > 0 ? f : undefined;
    }, 30_000, 250);
    // One execution sample is one 10 ms tick at 100 Hz.
    expect(cpu.numTicks).toBe(expected.executionSample.count * 10_000_000);
    expect(cpu.names).toEqual(expect.arrayContaining(['floe.fixture.Busy.main', 'floe.fixture.Busy.hashLoop', 'java.util.Arrays.sort']));
    const alloc = await render('memory:alloc_space:bytes:space:bytes{service_name="java.shop"}');
    expect(alloc.numTicks).toBe(expected.objectAllocationSample.totalWeight);
    expect(alloc.names).toContain('floe.fixture.Busy.allocate');
    // The agent gzips the part by default.
    const gzipped = new FormData();
    gzipped.set('jfr', new Blob([gzipSync(recording)]), 'jfr');
    expect((await ingest({ name: 'java.gz', ...window, format: 'jfr' }, gzipped)).status).toBe(200);
    const fromGzip = await waitFor('the gzipped JFR profile', async () => {
      const f = await render(`${CPU}{service_name="java.gz"}`);
      return f.numTicks > 0 ? f : undefined;
    }, 30_000, 250);
    expect(fromGzip.numTicks).toBe(cpu.numTicks);
  });

  it('refuses what it cannot take with a clear 4xx, and stores nothing of it', async () => {
    const error = async (res: Response, status: number, text: RegExp) => {
      expect(res.status).toBe(status);
      const body = (await res.json()) as { status: string; error: string };
      expect(body.status).toBe('error');
      expect(body.error).toMatch(text);
    };
    await error(await ingest({ ...window }, 'a;b 1'), 400, /query parameter name is required/);
    await error(await ingest({ name: 'x.cpu', ...window, format: 'jfr' }, 'x'), 400, /not a JFR recording/);
    await error(await ingest({ name: 'x.cpu', ...window, format: 'trie' }, 'x'), 415, /trie/);
    await error(await ingest({ name: 'x.cpu', ...window }, 'a;b many'), 400, /folded line 1 does not end in a sample count/);
    await error(await ingest({ name: 'x.cpu{env}', ...window }, 'a;b 1'), 400, /is not a label=value pair/);
    await error(await ingest({ name: 'x.cpu', from: 'yesterday', until: window.until }, 'a;b 1'), 400, /from "yesterday" is not a unix time/);
    await error(await ingest({ name: 'x.cpu', ...window, format: 'pprof' }, new Uint8Array([0x0a, 0xff])), 400, /not a valid pprof/);
    const prev = new FormData();
    prev.set('profile', new Blob([goCpuPprof()]));
    prev.set('prev_profile', new Blob([goCpuPprof()]));
    await error(await ingest({ name: 'x.mutex_count', ...window, format: 'pprof' }, prev), 400, /prev_profile/);
    await error(await ingest({ name: 'x.cpu', ...window }, 'a;b 1', {}, null), 401, /Authorization|API key/i);
    await error(await ingest({ name: 'x.cpu', ...window }, 'a;b 1', {}, otherKey), 403, /not valid for tenant acme/);
    expect((await render(`${CPU}{service_name="x"}`)).numTicks).toBe(0);
  });
});
