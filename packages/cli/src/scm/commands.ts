import type { Command } from 'commander';
import { SCM_INSTALLATION, SCM_INSTALLATIONS, SCM_LINK, callApi, expectShape, seg, sourceContextShape, type ConnectionOptions } from '@floe/client';
import { UsageError, action, connectionOf, requireTenant, tenantOption, withConnection, type ConnectionFlags } from '../command-helpers.ts';
import { formatTable } from '../sql-command.ts';

/**
 * `floe scm link|list|remove|attach|source-context`: the source-control integration from a
 * terminal, through the same routes as the UI (spec 2, "Command-line and agent-tool equivalents").
 * link, list and remove need a tenant admin's key; attach the admin key; source-context any key
 * that may query the tenant. --json prints the router's response as it came.
 */

interface Flags extends ConnectionFlags {
  tenant?: string;
  json?: boolean;
}

interface Installation {
  installation_id: number;
  account: { login: string; type: string };
  repositories: string[];
  linked_by: string;
  stale?: boolean;
}

type Snippet =
  | { status: 'available'; repository: string; ref: string | null; path: string; url: string; line: number | null; lines: { number: number; text: string }[] }
  | { status: 'unavailable'; reason: string };

const withFlags = (cmd: Command) => tenantOption(withConnection(cmd, 'API key or admin key (env FLOE_API_KEY)')).option('--json', 'print the raw JSON response');
const conn = (opts: Flags, tenant: string): ConnectionOptions => connectionOf(opts, { tenant });
const out = (text: string): void => {
  process.stdout.write(`${text}\n`);
};

function installationId(arg: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(arg)) throw new UsageError(`not an installation id: ${arg}`);
  return Number(arg);
}

function positiveInt(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^[0-9]+$/.test(v)) throw new UsageError(`${name} must be a whole number`);
  return Number(v);
}

function printInstallations(list: Installation[]): void {
  const rows = list.map((i) => ({ installation_id: i.installation_id, account: i.account.login, repositories: i.repositories.join(' '), linked_by: i.linked_by, stale: i.stale ?? false }));
  out(formatTable(['installation_id', 'account', 'repositories', 'linked_by', 'stale'], rows));
}

/** The snippet as an editor shows it: numbered lines, the frame's line marked. */
export function formatSnippet(s: Snippet): string {
  if (s.status === 'unavailable') return `unavailable: ${s.reason}`;
  const width = String(s.lines.at(-1)?.number ?? 1).length;
  const head = `${s.repository}@${s.ref ?? '(default branch)'}:${s.path}  ${s.url}`;
  return [head, ...s.lines.map((l) => `${l.number === s.line ? '>' : ' '} ${String(l.number).padStart(width)} | ${l.text}`)].join('\n');
}

export function registerScmCommands(program: Command): void {
  const scm = program.command('scm').description('source-control links (GitHub App) and source context around stack frames');
  const base = (t: string) => `api/v1/tenants/${seg(t)}/scm-installations`;

  withFlags(scm.command('link').description('start linking an installation: prints the URL to open in a browser signed in to Floe').argument('[tenant]'))
    .action(action('scm link', async (arg: string | undefined, opts: Flags) => {
      const t = requireTenant(arg ?? opts.tenant);
      const body = await callApi<{ install_url: string; expires_at: string }>(conn(opts, t), 'POST', `${base(t)}/link`, { expect: SCM_LINK });
      out(opts.json ? JSON.stringify(body) : `open this URL in a browser signed in to Floe (valid until ${body.expires_at}):\n${body.install_url}`);
    }));

  withFlags(scm.command('list').description('linked installations and their repositories, refreshed from the host').argument('[tenant]'))
    .action(action('scm list', async (arg: string | undefined, opts: Flags) => {
      const t = requireTenant(arg ?? opts.tenant);
      const body = await callApi<{ stale?: boolean; installations: Installation[] }>(conn(opts, t), 'GET', base(t), { expect: SCM_INSTALLATIONS });
      if (opts.json) return out(JSON.stringify(body));
      printInstallations(body.installations);
      if (body.stale) process.stderr.write('floe scm list: the host could not be reached; stale rows show the last known repositories\n');
    }));

  withFlags(scm.command('remove').description('remove a link (the app stays installed on the host)').argument('<installation_id>'))
    .action(action('scm remove', async (id: string, opts: Flags) => {
      const t = requireTenant(opts.tenant);
      await callApi(conn(opts, t), 'DELETE', `${base(t)}/${installationId(id)}`);
      out(opts.json ? JSON.stringify({ removed: Number(id) }) : `installation ${id} unlinked from ${t}`);
    }));

  withFlags(scm.command('attach').description('link an installation that already exists on the host (instance admin)').argument('<installation_id>'))
    .action(action('scm attach', async (id: string, opts: Flags) => {
      const t = requireTenant(opts.tenant);
      const body = await callApi<Installation>(conn(opts, t), 'POST', `${base(t)}/attach`, { body: { installation_id: installationId(id) }, expect: SCM_INSTALLATION });
      if (opts.json) out(JSON.stringify(body));
      else printInstallations([body]);
    }));

  withFlags(
    scm
      .command('source-context')
      .description('the source lines around a stack frame')
      .argument('<path>', 'file path inside the repository')
      .option('--repository <repo>', 'owner/name or URL (default: probe the linked repositories)')
      .option('--ref <ref>', 'branch, tag or commit (default: the default branch)')
      .option('--line <n>', 'line of the frame')
      .option('--context-lines <n>', 'lines on each side'),
  ).action(action('scm source-context', async (path: string, opts: Flags & { repository?: string; ref?: string; line?: string; contextLines?: string }) => {
    const t = requireTenant(opts.tenant);
    const line = positiveInt('--line', opts.line);
    const context = positiveInt('--context-lines', opts.contextLines);
    const route = `api/v1/tenants/${seg(t)}/source-context`;
    const answer = await callApi<{ status: string }>(conn(opts, t), 'POST', route, {
      body: {
        path,
        ...(opts.repository ? { repository: opts.repository } : {}),
        ...(opts.ref ? { ref: opts.ref } : {}),
        ...(line !== undefined ? { line } : {}),
        ...(context !== undefined ? { context_lines: context } : {}),
      },
      expect: { status: 'string' },
    });
    // What else it must hold depends on its status (formatSnippet reads the lines of any other than unavailable).
    const body = expectShape<Snippet>(answer, sourceContextShape(answer.status), route);
    out(opts.json ? JSON.stringify(body) : formatSnippet(body));
  }));
}
