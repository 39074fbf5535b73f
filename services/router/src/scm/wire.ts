import type { ScmInstallation } from '@floe/meta';

/** The `ScmInstallation` wire shape (snake_case, ISO times) and its JSON schema, defined together. */
export const scmInstallationSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['installation_id', 'account', 'repositories', 'linked_by', 'linked_at', 'refreshed_at'],
  properties: {
    installation_id: { type: 'integer', minimum: 1 },
    account: {
      type: 'object',
      additionalProperties: false,
      required: ['login', 'type'],
      properties: { login: { type: 'string' }, type: { type: 'string', description: '`Organization` or `User`.' } },
    },
    repositories: { type: 'array', items: { type: 'string' }, description: 'owner/name of each covered repository.' },
    linked_by: { type: 'string', description: 'Who linked it (`user:<id>`, `key:<id>`, `admin`).' },
    linked_at: { type: 'string', format: 'date-time' },
    refreshed_at: { type: 'string', format: 'date-time', description: 'When the repository list was last read from the host.' },
    stale: { type: 'boolean', description: 'In listings: the host could not be reached and this is the last known list.' },
  },
} as const;

export const scmInstallationWire = (i: ScmInstallation & { stale?: boolean }) => ({
  installation_id: i.installationId,
  account: { login: i.accountLogin, type: i.accountType },
  repositories: i.repositories,
  linked_by: i.linkedBy,
  linked_at: i.linkedAt.toISOString(),
  refreshed_at: i.refreshedAt.toISOString(),
  ...(i.stale !== undefined ? { stale: i.stale } : {}),
});
