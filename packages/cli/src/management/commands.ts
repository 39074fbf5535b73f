import type { Command } from 'commander';
import { action, connectionOf, repeatable, requireTenant, tenantOption, UsageError, withConnection, type ConnectionFlags } from '../command-helpers.ts';
import { formatTable } from '../sql-command.ts';
import { callApi, optional, seg, type ConnectionOptions, type Shape } from '@floe/client';

/**
 * `floe tenant|dataset|key|user …`: the management API from a terminal. Each command takes the
 * router URL (--url, env FLOE_URL) and a key (--api-key, env FLOE_API_KEY): the break-glass
 * auth.admin_api_key for instance-wide commands, a tenant:manage key for its own tenant. Output is
 * a table for people; --json prints the router's response as it came.
 */

interface CommonOptions extends ConnectionFlags {
  json?: boolean;
}

type Row = Record<string, unknown>;

const withCommon = (cmd: Command) => withConnection(cmd, 'API key or admin key (env FLOE_API_KEY)').option('--json', 'print the raw JSON response');

function conn(opts: CommonOptions, tenant?: string): ConnectionOptions {
  return connectionOf(opts, { tenant });
}

function printRows(rows: Row[], columns: string[]): void {
  process.stdout.write(`${formatTable(columns, rows)}\n`);
}

const emit = (opts: CommonOptions, body: unknown, human: () => void) => {
  if (opts.json) process.stdout.write(`${JSON.stringify(body)}\n`);
  else human();
};

/** A --set value: a number when it reads as one (rates, bytes), otherwise text (durations such as 30d). */
/** A --set value: a number, a JSON array or object (lists such as metrics_generator_processors), else text. */
function limitValue(text: string): unknown {
  if (text.trim() !== '' && Number.isFinite(Number(text))) return Number(text);
  if (/^\s*[[{]/.test(text)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

function setPath(into: Row, path: string[], value: unknown): void {
  let at = into;
  for (const key of path.slice(0, -1)) {
    if (typeof at[key] !== 'object' || at[key] === null) at[key] = {};
    at = at[key] as Row;
  }
  at[path.at(-1)!] = value;
}

function unsetPath(from: Row, path: string[]): void {
  const parent = path.slice(0, -1).reduce<Row | undefined>((at, key) => (at && typeof at[key] === 'object' ? (at[key] as Row) : undefined), from);
  if (parent) delete parent[path.at(-1)!];
  // An emptied group (retention_by_table) goes too.
  if (path.length > 1 && parent && Object.keys(parent).length === 0) unsetPath(from, path.slice(0, -1));
}

/** Limits as `key | value` rows, nested groups as dotted keys. */
const flatRows = (limits: Row, prefix = ''): Row[] =>
  Object.entries(limits).flatMap(([k, v]) => (v && typeof v === 'object' ? flatRows(v as Row, `${prefix}${k}.`) : [{ limit: `${prefix}${k}`, value: v }]));

const TENANT_COLUMNS = ['id', 'display_name', 'default_dataset', 'disabled', 'created_at'];
const DATASET_COLUMNS = ['id', 'is_default', 'created_at'];
const KEY_COLUMNS = ['id', 'name', 'dataset_id', 'scopes', 'created_by', 'last_used_at', 'revoked_at'];
const USER_COLUMNS = ['id', 'email', 'display_name', 'is_instance_admin', 'disabled', 'has_password'];
const MEMBERSHIP_COLUMNS = ['user_id', 'email', 'role', 'granted_by', 'created_at'];

// What the commands read of the router's answers (checked by the client before they read it).
const ROW: Shape = {};
const ROWS: Shape = [ROW];
const TENANT_LIMITS: Shape = { settings: optional({ limits: optional({}) }) };
const USAGE: Shape = { stored_bytes: 'number', max_storage_bytes: optional('number'), active_series: optional('number'), max_active_series: optional('number'), tables: [{ retention_ms: optional('number') }] };
const LISTING: Shape = { datasets: [{ dataset: 'string', tables: ROWS }] };

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

export function registerManagementCommands(program: Command): void {
  const tenant = program.command('tenant').description('tenants (instance admin; get works with any key of the tenant)');
  withCommon(tenant.command('create').description('create a tenant with its default dataset').argument('<id>').option('--display-name <name>'))
    .action(action('tenant create', async (id: string, opts: CommonOptions & { displayName?: string }) => {
      const body = await callApi<Row>(conn(opts), 'POST', 'api/v1/tenants', { body: { id, ...(opts.displayName ? { display_name: opts.displayName } : {}) }, expect: ROW });
      emit(opts, body, () => printRows([body], TENANT_COLUMNS));
    }));
  withCommon(tenant.command('list').description('list the tenants the key can see'))
    .action(action('tenant list', async (opts: CommonOptions) => {
      const body = await callApi<{ tenants: Row[] }>(conn(opts), 'GET', 'api/v1/tenants', { expect: { tenants: ROWS } });
      emit(opts, body, () => printRows(body.tenants, TENANT_COLUMNS));
    }));
  withCommon(tenant.command('get').description('show one tenant').argument('<id>'))
    .action(action('tenant get', async (id: string, opts: CommonOptions) => {
      const body = await callApi<Row>(conn(opts, id), 'GET', `api/v1/tenants/${seg(id)}`, { expect: ROW });
      emit(opts, body, () => printRows([body], TENANT_COLUMNS));
    }));
  withCommon(tenant.command('delete').description('delete a tenant with its datasets, keys, memberships and stored data').argument('<id>'))
    .action(action('tenant delete', async (id: string, opts: CommonOptions) => {
      await callApi(conn(opts), 'DELETE', `api/v1/tenants/${seg(id)}`);
      emit(opts, { deleted: id }, () => process.stdout.write(`tenant ${id} deleted\n`));
    }));

  withCommon(
    tenant
      .command('limits')
      .description("show a tenant's own limits (settings.limits: rates, storage quota, retention), or change them (instance admin)")
      .argument('<id>')
      .option('--set <key=value>', 'override a limit, e.g. retention=30d, retention_by_table.traces=14d, max_storage_bytes=1e11 (repeatable)', repeatable, [])
      .option('--unset <key>', "drop the tenant's override: the instance's limits.<key> applies again (repeatable)", repeatable, []),
  ).action(
    action('tenant limits', async (id: string, opts: CommonOptions & { set: string[]; unset: string[] }) => {
      let body = await callApi<Row>(conn(opts, id), 'GET', `api/v1/tenants/${seg(id)}`, { expect: TENANT_LIMITS });
      if (opts.set.length + opts.unset.length > 0) {
        const settings = { ...((body.settings as Row | undefined) ?? {}) };
        const limits = structuredClone((settings.limits as Row | undefined) ?? {});
        for (const kv of opts.set) {
          const eq = kv.indexOf('=');
          if (eq <= 0) throw new UsageError(`--set takes key=value, got ${JSON.stringify(kv)}`);
          setPath(limits, kv.slice(0, eq).split('.'), limitValue(kv.slice(eq + 1)));
        }
        for (const key of opts.unset) unsetPath(limits, key.split('.'));
        if (Object.keys(limits).length > 0) settings.limits = limits;
        else delete settings.limits;
        body = await callApi<Row>(conn(opts), 'PATCH', `api/v1/tenants/${seg(id)}`, { body: { settings }, expect: TENANT_LIMITS });
      }
      const limits = ((body.settings as Row | undefined)?.limits as Row | undefined) ?? {};
      emit(opts, limits, () => printRows(flatRows(limits).sort((a, b) => String(a.limit).localeCompare(String(b.limit))), ['limit', 'value']));
    }),
  );

  withCommon(tenant.command('usage').description("what the tenant's tables hold against its storage quota, with each table's retention").argument('<id>'))
    .action(action('tenant usage', async (id: string, opts: CommonOptions) => {
      type Usage = { stored_bytes: number; max_storage_bytes: number | null; active_series: number | null; max_active_series: number | null; tables: Row[] };
      const body = await callApi<Usage>(conn(opts, id), 'GET', `api/v1/tenants/${seg(id)}/usage`, { expect: USAGE });
      const { formatDurationMs } = await import('@floe/config');
      emit(opts, body, () => {
        const rows = body.tables.map((t) => ({ ...t, retention: t.retention_ms === null ? 'forever' : formatDurationMs(Number(t.retention_ms)) }));
        printRows(rows, ['dataset', 'table', 'rows', 'files', 'bytes', 'retention']);
        process.stdout.write(`stored ${body.stored_bytes} bytes of ${body.max_storage_bytes ?? 'unlimited'}\n`);
        if (body.max_active_series !== null) process.stdout.write(`active series ${body.active_series ?? 0} of ${body.max_active_series}\n`);
      });
    }));

  // `floe tenant table list|provision [tenant]`: any key of the tenant may call both.
  const table = tenant.command('table').description('the tables of a tenant’s datasets');
  type Listing = { tables: Row[]; datasets: Array<{ dataset: string; tables: Row[] }> };
  const tableRows = (body: Listing): Row[] =>
    body.datasets.flatMap((d) => (d.tables.length > 0 ? d.tables : [{ dataset: d.dataset, name: '(none)', full_name: '' }]));
  withCommon(tenantOption(table.command('list').description('list the tables that exist, by dataset').argument('[tenant]')))
    .action(action('tenant table list', async (arg: string | undefined, opts: CommonOptions & { tenant?: string }) => {
      const t = requireTenant(arg ?? opts.tenant);
      const body = await callApi<Listing>(conn(opts, t), 'GET', `api/v1/tenants/${seg(t)}/tables`, { expect: LISTING });
      emit(opts, body, () => printRows(tableRows(body), ['dataset', 'name', 'full_name']));
    }));
  withCommon(tenantOption(table.command('provision').description('create every enabled table of every dataset now').argument('[tenant]')))
    .action(action('tenant table provision', async (arg: string | undefined, opts: CommonOptions & { tenant?: string }) => {
      const t = requireTenant(arg ?? opts.tenant);
      const body = await callApi<Listing & { provisioned: Row[] }>(conn(opts, t), 'POST', `api/v1/tenants/${seg(t)}/tables/create`, { expect: { provisioned: ROWS } });
      emit(opts, body, () => printRows(body.provisioned, ['dataset', 'table', 'outcome']));
    }));

  const dataset = program.command('dataset').description('datasets of a tenant');
  withCommon(tenantOption(dataset.command('create').description('create a dataset (tenant admin)').argument('<id>')))
    .action(action('dataset create', async (id: string, opts: CommonOptions & { tenant?: string }) => {
      const t = requireTenant(opts.tenant);
      const body = await callApi<Row>(conn(opts, t), 'POST', `api/v1/tenants/${seg(t)}/datasets`, { body: { id }, expect: ROW });
      emit(opts, body, () => printRows([body], DATASET_COLUMNS));
    }));
  withCommon(tenantOption(dataset.command('list').description('list a tenant’s datasets')))
    .action(action('dataset list', async (opts: CommonOptions & { tenant?: string }) => {
      const t = requireTenant(opts.tenant);
      const body = await callApi<{ datasets: Row[] }>(conn(opts, t), 'GET', `api/v1/tenants/${seg(t)}/datasets`, { expect: { datasets: ROWS } });
      emit(opts, body, () => printRows(body.datasets, DATASET_COLUMNS));
    }));
  withCommon(tenantOption(dataset.command('delete').description('delete a dataset with the keys bound to it and its stored data (tenant admin)').argument('<id>')))
    .action(action('dataset delete', async (id: string, opts: CommonOptions & { tenant?: string }) => {
      const t = requireTenant(opts.tenant);
      await callApi(conn(opts, t), 'DELETE', `api/v1/tenants/${seg(t)}/datasets/${seg(id)}`);
      emit(opts, { tenant: t, deleted: id }, () => process.stdout.write(`dataset ${id} of tenant ${t} deleted\n`));
    }));

  const key = program.command('key').description('API keys of a tenant');
  withCommon(
    tenantOption(
      key
        .command('create')
        .description('create an API key; its secret is printed once')
        .requiredOption('--scopes <list>', 'comma-separated: ingest, query, delete, tenant:manage')
        .option('--dataset <id>', 'bind the key to one dataset')
        .option('--name <name>', 'a label for the key'),
    ),
  ).action(action('key create', async (opts: CommonOptions & { tenant?: string; scopes: string; dataset?: string; name?: string }) => {
    const t = requireTenant(opts.tenant);
    const scopes = opts.scopes.split(',').map((s) => s.trim()).filter(Boolean);
    const body = await callApi<Row>(conn(opts, t), 'POST', `api/v1/tenants/${seg(t)}/api-keys`, {
      body: {
        scopes,
        ...(opts.dataset ? { dataset_id: opts.dataset } : {}),
        ...(opts.name ? { name: opts.name } : {}),
      },
      expect: ROW,
    });
    emit(opts, body, () => {
      printRows([body], KEY_COLUMNS);
      process.stdout.write(`secret: ${String(body.secret)}\n(the secret is shown once; store it now)\n`);
    });
  }));
  withCommon(tenantOption(key.command('list').description('list a tenant’s keys (never secrets)').option('--all', 'include revoked keys')))
    .action(action('key list', async (opts: CommonOptions & { tenant?: string; all?: boolean }) => {
      const t = requireTenant(opts.tenant);
      const body = await callApi<{ api_keys: Row[] }>(conn(opts, t), 'GET', `api/v1/tenants/${seg(t)}/api-keys`, { query: { include_revoked: opts.all ? 'true' : undefined }, expect: { api_keys: ROWS } });
      emit(opts, body, () => printRows(body.api_keys, KEY_COLUMNS));
    }));
  withCommon(tenantOption(key.command('revoke').description('revoke a key: it stops working at once').argument('<key id>')))
    .action(action('key revoke', async (keyId: string, opts: CommonOptions & { tenant?: string }) => {
      const t = requireTenant(opts.tenant);
      const body = await callApi<Row>(conn(opts, t), 'DELETE', `api/v1/tenants/${seg(t)}/api-keys/${seg(keyId)}`, { expect: ROW });
      emit(opts, body, () => printRows([body], KEY_COLUMNS));
    }));

  const user = program.command('user').description('local users and their roles');
  withCommon(
    user
      .command('create')
      .description('create a local user (instance admin); passwordless unless a password is given')
      .argument('<email>')
      .option('--display-name <name>')
      .option('--password-stdin', 'read the password from standard input')
      .option('--instance-admin', 'make the user an instance admin')
      .option('--disabled', 'create the user disabled'),
  ).action(action('user create', async (email: string, opts: CommonOptions & { displayName?: string; passwordStdin?: boolean; instanceAdmin?: boolean; disabled?: boolean }) => {
    const password = opts.passwordStdin ? await readStdin() : undefined;
    const body = await callApi<Row>(conn(opts), 'POST', 'api/v1/users', {
      body: {
        email,
        ...(opts.displayName ? { display_name: opts.displayName } : {}),
        ...(password !== undefined ? { password } : {}),
        ...(opts.instanceAdmin ? { is_instance_admin: true } : {}),
        ...(opts.disabled ? { disabled: true } : {}),
      },
      expect: ROW,
    });
    emit(opts, body, () => printRows([body], USER_COLUMNS));
  }));
  withCommon(tenantOption(user.command('list').description('list users (instance admin), or with --tenant the tenant’s memberships')))
    .action(action('user list', async (opts: CommonOptions & { tenant?: string }) => {
      if (opts.tenant) {
        const body = await callApi<{ memberships: Row[] }>(conn(opts, opts.tenant), 'GET', `api/v1/tenants/${seg(opts.tenant)}/memberships`, { expect: { memberships: ROWS } });
        emit(opts, body, () => printRows(body.memberships, MEMBERSHIP_COLUMNS));
        return;
      }
      const body = await callApi<{ users: Row[] }>(conn(opts), 'GET', 'api/v1/users', { expect: { users: ROWS } });
      emit(opts, body, () => printRows(body.users, USER_COLUMNS));
    }));
  withCommon(
    tenantOption(
      user
        .command('grant')
        .description('grant a user a role in a tenant (tenant admin)')
        .argument('<user>', 'email address or user id')
        .requiredOption('--role <role>', 'admin, member or viewer'),
    ),
  ).action(action('user grant', async (who: string, opts: CommonOptions & { tenant?: string; role: string }) => {
    const t = requireTenant(opts.tenant);
    const ref = who.includes('@') ? { email: who } : { user_id: who };
    const body = await callApi<Row>(conn(opts, t), 'POST', `api/v1/tenants/${seg(t)}/memberships`, { body: { ...ref, role: opts.role }, expect: ROW });
    emit(opts, body, () => printRows([body], MEMBERSHIP_COLUMNS));
  }));
}
