import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { SCM_INSTALLATION, SCM_INSTALLATIONS, SCM_LINK } from '@floe/client';
import { routerDelete, routerPost, seg } from '../router-client.ts';
import { addTool, get, tenantOf, type ToolContext } from '../tool-kit.ts';

/**
 * The tenant's source-control links (spec 2, Source-control integration: "Command-line and
 * agent-tool equivalents exist for link, list, remove, attach and source context"), through the
 * routes the CLI's `floe scm` and the UI use. Who may call which is the router's decision, not
 * ours: link, list and remove need a tenant admin, attach an instance admin, and a refusal reaches
 * the agent as the router's message. With the integration unconfigured every route answers 404.
 */

const installationsPath = (c: ToolContext) => `api/v1/tenants/${seg(tenantOf(c))}/scm-installations`;

// The router's ids: positive and within what the host and a JSON number can carry.
const installationIdInput = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).describe('Installation id on GitHub, as scm_list shows it.');

const installation = z.looseObject({
  installation_id: z.number(),
  account: z.object({ login: z.string(), type: z.string() }),
  repositories: z.array(z.string()),
  linked_by: z.string(),
  linked_at: z.string(),
  refreshed_at: z.string(),
  stale: z.boolean().optional(),
});

const TENANT_ADMIN = "Needs a tenant admin's credentials (forbidden otherwise); not_found (HTTP 404) when the source-control integration is not configured on this Floe.";

export function registerScmInstallationTools(server: McpServer, ctx: ToolContext): void {
  addTool(server, ctx, {
    name: 'scm_list',
    title: 'Linked source-control installations',
    description: `List the GitHub App installations linked to the tenant, each with its account and the repositories (owner/name) that source_context can read, refreshed from GitHub. stale: true (on the answer and on an installation) means GitHub could not be reached and the last known repositories are shown. ${TENANT_ADMIN}`,
    input: {},
    output: {
      configured: z.boolean(),
      stale: z.boolean().describe('true when GitHub could not be reached for at least one installation'),
      installations: z.array(installation),
    },
    // Cut repositories before installations: which installations are linked matters more than every repository name.
    lists: [['installations', '*', 'repositories'], ['installations']],
    run: (_args, c) => get<Record<string, unknown>>(c, installationsPath(c), SCM_INSTALLATIONS),
  });

  addTool(server, ctx, {
    name: 'scm_link',
    title: 'Start linking a GitHub installation',
    description: `Start linking a GitHub App installation to the tenant. Answers install_url, which a person must open in a browser signed in to Floe as an admin of the tenant: GitHub asks them to install the app (or change its repositories) and sends them back to Floe, which records the link. The agent cannot finish this itself: give the user the URL, then check with scm_list. The URL carries a single-use state token refused after expires_at; each call makes a new one. ${TENANT_ADMIN}`,
    input: {},
    output: {
      install_url: z.string().describe('Open in a browser signed in to Floe'),
      expires_at: z.string().describe('RFC 3339; the state in install_url is refused after it'),
    },
    lists: [],
    writes: { destructive: false, idempotent: false },
    run: (_args, c) => routerPost<Record<string, unknown>>(c.router, `${installationsPath(c)}/link`, SCM_LINK),
  });

  addTool(server, ctx, {
    name: 'scm_remove',
    title: 'Remove a linked GitHub installation',
    description: `Remove the link between the tenant and a GitHub App installation, by installation id (from scm_list). Floe stops reading through it at once: source_context answers no_installation for its repositories. The app stays installed on GitHub and can be linked again with scm_link. not_found (HTTP 404) when the tenant has no such link. ${TENANT_ADMIN}`,
    input: { installation_id: installationIdInput },
    output: { removed: z.number().describe('The installation id no longer linked') },
    lists: [],
    writes: { destructive: true, idempotent: true },
    run: async ({ installation_id }, c) => {
      await routerDelete(c.router, `${installationsPath(c)}/${installation_id}`);
      // The route answers 204 with no body; this is what `floe scm remove --json` prints.
      return { removed: installation_id };
    },
  });

  addTool(server, ctx, {
    name: 'scm_attach',
    title: 'Attach an existing GitHub installation',
    description:
      "Link a GitHub App installation that already exists on GitHub to the tenant by its id, without the browser flow of scm_link. Instance administrators only (Floe's admin key): a tenant's own key, even a tenant admin's, gets forbidden (HTTP 403). The installation must grant read-only contents and metadata (bad_data (HTTP 400) otherwise); not_found (HTTP 404) when the app has no such installation or the source-control integration is not configured. Answers the linked installation with its repositories.",
    input: { installation_id: installationIdInput },
    output: installation.shape,
    lists: [['repositories']],
    writes: { destructive: false, idempotent: true },
    run: ({ installation_id }, c) => routerPost<Record<string, unknown>>(c.router, `${installationsPath(c)}/attach`, SCM_INSTALLATION, { installation_id }),
  });
}
