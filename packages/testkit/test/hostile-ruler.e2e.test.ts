import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Hostile input to the ruler's config API and evaluation (embedded): text the metadata DB cannot
 * hold (U+0000, lone surrogates) is refused as a bad rule group, not a 500, and an alert template
 * that produces such text does not stop the group's state from being saved; a JSON string body is
 * a string, not YAML to read again.
 */
describe('ruler: hostile rule groups (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'hostile';

  const api = async (method: string, path: string, body?: string, contentType = 'application/yaml') => {
    const res = await fetch(`${floe.routerUrl}/metricquery${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, ...(body !== undefined ? { 'content-type': contentType } : {}) },
      ...(body !== undefined ? { body } : {}),
    });
    const text = await res.text();
    return { status: res.status, text, json: () => JSON.parse(text) as Record<string, any> };
  };

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { ruler: { evaluation_interval: '1s', poll_interval: '200ms' } } });
    key = (await floe.bootstrap(tenant)).api_key;
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it.each([
    ['an alert name with NUL', 'name: g\nrules:\n- alert: "A\\0"\n  expr: up\n', 'invalid alert name "A\\u0000": contains a NUL character'],
    ['an annotation with NUL', 'name: g\nrules:\n- alert: A\n  expr: up\n  annotations: {s: "a\\0b"}\n', 'invalid annotation value: "a\\u0000b" (contains a NUL character)'],
    ['an annotation with a lone surrogate', 'name: g\nrules:\n- alert: A\n  expr: up\n  annotations: {s: "a\\ud800"}\n', 'invalid annotation value: "a\\ud800" (not valid UTF-8)'],
    ['a group label with NUL', 'name: g\nlabels: {a: "\\0"}\nrules: []\n', 'invalid label value: "\\u0000" (contains a NUL character)'],
    ['a group name with a lone surrogate', 'name: "g\\ud800"\nrules: []\n', 'invalid group name "g\\ud800": not valid UTF-8'],
    ['an expression comment with NUL', 'name: g\nrules:\n- alert: A\n  expr: "up # \\0"\n', 'invalid expression: contains a NUL character'],
  ])('refuses %s with 400 and the error envelope', async (_what, yaml, message) => {
    const res = await api('POST', '/config/v1/rules/ns', yaml);
    expect(res.status, res.text).toBe(400);
    const body = res.json();
    expect(body).toMatchObject({ status: 'error', errorType: 'bad_data' });
    expect(body.error).toContain(message);
    expect((await api('GET', '/config/v1/rules/ns')).status).toBe(404);
  });

  it('takes a JSON body as JSON: a JSON string is refused, an object is a group', async () => {
    const str = await api('POST', '/config/v1/rules/ns', JSON.stringify('name: sneaky'), 'application/json');
    expect(str.status, str.text).toBe(400);
    expect(str.json()).toEqual({ status: 'error', errorType: 'bad_data', error: 'yaml: line 1: cannot unmarshal !!str into rulefmt.RuleGroup' });
    expect((await api('GET', '/config/v1/rules/ns/sneaky')).status).toBe(404);
    const obj = await api('POST', '/config/v1/rules/ns', JSON.stringify({ name: 'fromjson', rules: [{ record: 'a:b', expr: 'vector(1)' }] }), 'application/json');
    expect(obj.status, obj.text).toBe(202);
    expect((await api('GET', '/config/v1/rules/ns/fromjson')).text).toContain('record: a:b');
    expect((await api('DELETE', '/config/v1/rules/ns')).status).toBe(202);
  });

  it('reads a group as YAML whatever its Content-Type, as Mimir does (curl -d sends a form type)', async () => {
    const group = (name: string) => `name: ${name}\nrules:\n- record: a:b\n  expr: vector(1)\n`;
    for (const [name, type] of [['asform', 'application/x-www-form-urlencoded'], ['asbytes', 'application/octet-stream'], ['asother', 'application/x-something']] as const) {
      const res = await api('POST', '/config/v1/rules/types', group(name), type);
      expect(res.status, `${type}: ${res.text}`).toBe(202);
      expect((await api('GET', `/config/v1/rules/types/${name}`)).text).toContain('record: a:b');
    }
    expect((await api('DELETE', '/config/v1/rules/types')).status).toBe(202);
  });

  it('saves the state of a group whose alert template expands to NUL: the firing alert is listed', async () => {
    const group = 'name: nul\ninterval: 1s\nrules:\n- alert: Nul\n  expr: vector(1)\n  annotations:\n    s: \'{{ "a\\x00b" }}\'\n';
    expect((await api('POST', '/config/v1/rules/tmpl', group)).status).toBe(202);
    const alerts = await waitFor(
      'the alert listed',
      async () => {
        const list = (await api('GET', '/api/v1/alerts')).json().data.alerts as Array<Record<string, any>>;
        return list.length > 0 ? list : undefined;
      },
      30_000,
      200,
    );
    expect(alerts[0]).toMatchObject({ labels: { alertname: 'Nul' }, state: 'firing', annotations: { s: 'a\ufffdb' } });
    const rules = (await api('GET', '/api/v1/rules')).json().data.groups as Array<Record<string, any>>;
    expect(rules[0]!.rules[0]).toMatchObject({ name: 'Nul', health: 'ok' });
  });

  it("evaluates a heavy PromQL query off the router's event loop: /ready answers while it runs", async () => {
    const order: string[] = [];
    const heavy = api('GET', `/api/v1/query?${new URLSearchParams({ query: 'count_over_time(vector(1)[2h:1ms])' })}`).then((r) => {
      order.push('query');
      return r;
    });
    // Given time to be read and to start evaluating (7.2 million subquery steps).
    await new Promise((r) => setTimeout(r, 300));
    const ready = await fetch(`${floe.routerUrl}/ready`);
    order.push('ready');
    expect(ready.status).toBe(200);
    const res = await heavy;
    expect(res.status, res.text).toBe(200);
    expect(res.json().data.result).toEqual([{ metric: {}, value: [expect.any(Number), '7200000'] }]);
    expect(order).toEqual(['ready', 'query']);
  });
});
