import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The real `floe` command against a server that answers 200 with a body of another shape than the
 * command reads (another version, a proxy, not Floe at all): one line naming the path and what was
 * wrong, exit 1, nothing on stdout, never a TypeError.
 */

const FLOE_BIN = fileURLToPath(new URL('../bin/floe.js', import.meta.url));

/** Each path's 200 body. */
const ANSWERS: Record<string, string> = {
  '/api/v1/tenants': '{"tenants":5}',
  '/api/v1/tenants/acme/datasets': '{"datasets":[{"id":"a"},null]}',
  '/api/v1/tenants/acme/usage': '{"stored_bytes":1,"max_storage_bytes":null,"active_series":null,"max_active_series":null,"tables":"none"}',
  '/api/v1/tenants/acme': '"acme"',
  '/api/v1/tenants/acme/source-context': '{"status":"available","repository":"o/r","ref":null,"path":"a.ts","url":"https://x","line":null}',
  '/api/v1/tenants/acme/scm-installations': '{"stale":false,"installations":[{"installation_id":1,"account":"acme","repositories":[],"linked_by":"admin"}]}',
};

function runFloe(args: string[], url: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [FLOE_BIN, ...args, '--url', url, '--api-key', 'k'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FLOE_TENANT: 'acme' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('floe against an answer of the wrong shape', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      const body = ANSWERS[new URL(req.url!, 'http://x').pathname];
      if (body === undefined) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"status":"error","errorType":"not_found","error":"no such route"}');
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it.each([
    [['tenant', 'list'], '/api/v1/tenants: tenants: expected a list, got 5'],
    [['dataset', 'list'], '/api/v1/tenants/acme/datasets: datasets[1]: expected an object, got null'],
    [['tenant', 'usage', 'acme'], '/api/v1/tenants/acme/usage: tables: expected a list, got "none"'],
    [['tenant', 'limits', 'acme'], '/api/v1/tenants/acme: expected an object or a list, got "acme"'],
    [['scm', 'source-context', 'a.ts'], '/api/v1/tenants/acme/source-context: lines: expected a list, got nothing'],
    [['scm', 'list'], '/api/v1/tenants/acme/scm-installations: installations[0].account: expected an object, got "acme"'],
  ])('floe %j says which answer was wrong and how, exit 1', async (args, what) => {
    const r = await runFloe(args, url);
    expect(r.stderr).toBe(`floe: unexpected answer from ${what}\n`);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
  });

  it('the router\'s own refusals keep their form (command name, message, status)', async () => {
    const r = await runFloe(['key', 'list'], url);
    expect(r.stderr).toBe('floe key list: no such route (HTTP 404 not_found)\n');
    expect(r.code).toBe(1);
  });
});
