import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { jwtVerify } from 'jose';

/**
 * A small stand-in for the GitHub REST API and its OAuth endpoint, on loopback, for tests of the
 * source-control integration. GitHub is an external service; this serves just the calls Octokit
 * makes for Floe, laid out like GitHub Enterprise Server (REST under /api/v3, web and OAuth at the
 * root) so Octokit derives the OAuth URL from the API URL exactly as it does there.
 *
 * It checks what GitHub checks: app routes need an RS256 JWT signed with the app's private key
 * (verified with the test's public key), installation routes an installation token it minted,
 * user routes a user token from the OAuth code exchange. Every request is recorded, so a test can
 * count what reached the host.
 */

export interface FakeInstallation {
  id: number;
  account: { login: string; type: 'Organization' | 'User' };
  /** e.g. { contents: 'read', metadata: 'read' } */
  permissions: Record<string, string>;
  /** owner/name of each covered repository. */
  repositories: string[];
}

export type FakeEntry =
  | { type: 'file'; content: string | Buffer }
  | { type: 'submodule' }
  | { type: 'symlink'; target: string };

export interface FakeGitHubOptions {
  appId: string;
  /** The public half of the app's key: app JWTs are verified with it. */
  appPublicKey: KeyObject;
  clientId: string;
  clientSecret: string;
}

export interface RecordedRequest {
  method: string;
  /** Path without the query string, decoded. */
  path: string;
  query: URLSearchParams;
}

export interface FakeGitHub {
  /** scm.api_url */
  apiUrl: string;
  /** scm.web_url */
  webUrl: string;
  readonly requests: readonly RecordedRequest[];
  /** Requests whose method and path match. */
  count(method: string, path: string | RegExp): number;
  addInstallation(inst: FakeInstallation): void;
  /** Puts a file (or a submodule or symlink entry) at a ref; `main` is every repository's default branch. */
  put(repository: string, path: string, entry: FakeEntry, ref?: string): void;
  /** A code the OAuth exchange turns into a token of a user who can see these installations. */
  issueCode(user: string, installationIds: number[]): string;
  /** While down, every connection is dropped without an answer. */
  setDown(down: boolean): void;
  close(): Promise<void>;
}

const DEFAULT_BRANCH = 'main';
const TOKEN_LIFETIME_MS = 60 * 60_000;

export async function startFakeGitHub(opts: FakeGitHubOptions): Promise<FakeGitHub> {
  const installations = new Map<number, FakeInstallation>();
  const files = new Map<string, FakeEntry>();
  const installationTokens = new Map<string, number>();
  const codes = new Map<string, { user: string; installationIds: number[] }>();
  const userTokens = new Map<string, { user: string; installationIds: number[] }>();
  const requests: RecordedRequest[] = [];
  let down = false;
  let webUrl = '';

  const fileKey = (repository: string, ref: string, path: string) => `${repository.toLowerCase()}@${ref}:${path}`;
  const covering = (installationId: number, repository: string) => installations.get(installationId)?.repositories.some((r) => r.toLowerCase() === repository.toLowerCase()) ?? false;

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  };
  const notFound = (res: ServerResponse) => send(res, 404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' });

  const credential = (req: IncomingMessage) => /^(?:bearer|token)\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];

  async function appJwtValid(req: IncomingMessage): Promise<boolean> {
    const jwt = credential(req);
    if (!jwt) return false;
    try {
      const { payload } = await jwtVerify(jwt, opts.appPublicKey, { algorithms: ['RS256'] });
      return String(payload.iss) === opts.appId;
    } catch {
      return false;
    }
  }

  const installationOf = (req: IncomingMessage) => {
    const token = credential(req);
    return token === undefined ? undefined : installationTokens.get(token);
  };

  const repoWire = (fullName: string, i: number) => {
    const [owner, name] = fullName.split('/') as [string, string];
    return { id: 1000 + i, name, full_name: fullName, private: true, owner: { login: owner }, default_branch: DEFAULT_BRANCH };
  };
  const installationWire = (inst: FakeInstallation) => ({ id: inst.id, account: { login: inst.account.login, type: inst.account.type }, permissions: inst.permissions, repository_selection: 'selected' });

  async function readBody(req: IncomingMessage): Promise<Record<string, string>> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    if (text === '') return {};
    if ((req.headers['content-type'] ?? '').includes('json')) return JSON.parse(text) as Record<string, string>;
    return Object.fromEntries(new URLSearchParams(text));
  }

  function contents(res: ServerResponse, repository: string, path: string, ref: string) {
    const entry = files.get(fileKey(repository, ref, path));
    const htmlUrl = `${webUrl}/${repository}/blob/${ref}/${path}`;
    const base = { name: path.split('/').pop(), path, sha: 'f'.repeat(40), html_url: htmlUrl };
    if (entry?.type === 'file') {
      const bytes = Buffer.from(entry.content);
      // The host inlines content up to 1 MB; beyond that it sends encoding "none".
      const inline = bytes.length <= 1024 * 1024;
      return send(res, 200, { ...base, type: 'file', size: bytes.length, encoding: inline ? 'base64' : 'none', content: inline ? bytes.toString('base64').replace(/(.{60})/g, '$1\n') : '' });
    }
    if (entry?.type === 'submodule') return send(res, 200, { ...base, type: 'submodule', size: 0, submodule_git_url: 'https://example.invalid/x.git' });
    if (entry?.type === 'symlink') return send(res, 200, { ...base, type: 'symlink', size: entry.target.length, target: entry.target });
    const prefix = fileKey(repository, ref, path.replace(/\/+$/, '') + '/');
    const children = [...files.keys()].filter((k) => k.startsWith(prefix));
    if (children.length > 0) return send(res, 200, children.map((k) => ({ type: 'file', name: k.slice(prefix.length), path: `${path}/${k.slice(prefix.length)}` })));
    return notFound(res);
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const path = decodeURIComponent(url.pathname);
    const method = req.method ?? 'GET';
    requests.push({ method, path, query: url.searchParams });
    let m: RegExpExecArray | null;

    if (method === 'POST' && path === '/login/oauth/access_token') {
      const body = await readBody(req);
      const grant = codes.get(body.code ?? '');
      // GitHub answers a bad code with 200 and an error field.
      if (body.client_id !== opts.clientId || body.client_secret !== opts.clientSecret || !grant) return send(res, 200, { error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.' });
      codes.delete(body.code!);
      const token = `ghu_${randomBytes(16).toString('hex')}`;
      userTokens.set(token, grant);
      return send(res, 200, { access_token: token, token_type: 'bearer', scope: '' });
    }
    if ((m = /^\/api\/v3\/app\/installations\/(\d+)\/access_tokens$/.exec(path)) && method === 'POST') {
      if (!(await appJwtValid(req))) return send(res, 401, { message: 'A JSON web token could not be decoded' });
      const inst = installations.get(Number(m[1]));
      if (!inst) return notFound(res);
      const token = `ghs_${randomBytes(16).toString('hex')}`;
      installationTokens.set(token, inst.id);
      return send(res, 201, { token, expires_at: new Date(Date.now() + TOKEN_LIFETIME_MS).toISOString(), permissions: inst.permissions, repository_selection: 'selected' });
    }
    if ((m = /^\/api\/v3\/app\/installations\/(\d+)$/.exec(path)) && method === 'GET') {
      if (!(await appJwtValid(req))) return send(res, 401, { message: 'A JSON web token could not be decoded' });
      const inst = installations.get(Number(m[1]));
      return inst ? send(res, 200, installationWire(inst)) : notFound(res);
    }
    if (path === '/api/v3/installation/repositories' && method === 'GET') {
      const id = installationOf(req);
      if (id === undefined) return send(res, 401, { message: 'Bad credentials' });
      const repos = installations.get(id)?.repositories ?? [];
      return send(res, 200, { total_count: repos.length, repository_selection: 'selected', repositories: repos.map(repoWire) });
    }
    if (path === '/api/v3/user/installations' && method === 'GET') {
      const user = userTokens.get(credential(req) ?? '');
      if (!user) return send(res, 401, { message: 'Bad credentials' });
      const list = user.installationIds.flatMap((id) => (installations.has(id) ? [installationWire(installations.get(id)!)] : []));
      return send(res, 200, { total_count: list.length, installations: list });
    }
    if ((m = /^\/api\/v3\/repos\/([^/]+)\/([^/]+)(?:\/contents\/(.*))?$/.exec(path)) && method === 'GET') {
      const id = installationOf(req);
      if (id === undefined) return send(res, 401, { message: 'Bad credentials' });
      const repository = `${m[1]}/${m[2]}`;
      // An installation token reaches only its own repositories; others do not exist for it.
      if (!covering(id, repository)) return notFound(res);
      if (m[3] === undefined) return send(res, 200, repoWire(repository, 0));
      return contents(res, repository, m[3], url.searchParams.get('ref') ?? DEFAULT_BRANCH);
    }
    return notFound(res);
  }

  const server: Server = createServer((req, res) => {
    if (down) {
      req.socket.destroy();
      return;
    }
    route(req, res).catch((err: unknown) => send(res, 500, { message: String(err) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  webUrl = `http://127.0.0.1:${port}`;

  return {
    apiUrl: `${webUrl}/api/v3`,
    webUrl,
    requests,
    count: (method, path) => requests.filter((r) => r.method === method && (typeof path === 'string' ? r.path === path : path.test(r.path))).length,
    addInstallation: (inst) => void installations.set(inst.id, inst),
    put: (repository, path, entry, ref = DEFAULT_BRANCH) => void files.set(fileKey(repository, ref, path), entry),
    issueCode: (user, installationIds) => {
      const code = randomBytes(10).toString('hex');
      codes.set(code, { user, installationIds });
      return code;
    },
    setDown: (d) => {
      down = d;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A fake GitHub serving one GitHub App whose key pair is made here, and the `scm` section of
 * Floe's config that points at it (the private key in PKCS#1 PEM, as GitHub hands it out).
 */
export async function startFakeGitHubApp(): Promise<{ gh: FakeGitHub; scm: { app_id: string; app_slug: string; private_key: string; client_id: string; client_secret: string; api_url: string; web_url: string } }> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const app = { appId: '4242', clientId: 'Iv1.floetest', clientSecret: 'test-client-secret' };
  const gh = await startFakeGitHub({ ...app, appPublicKey: publicKey });
  const scm = {
    app_id: app.appId,
    app_slug: 'floe-test',
    private_key: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
    client_id: app.clientId,
    client_secret: app.clientSecret,
    api_url: gh.apiUrl,
    web_url: gh.webUrl,
  };
  return { gh, scm };
}
