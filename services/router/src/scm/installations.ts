import { badData, notFound, unavailable } from '@floe/errors';
import { deleteScmInstallation, listScmInstallations, updateScmRepositories, upsertScmInstallation, type ScmInstallation } from '@floe/meta';
import { HostError, hasWritePermission } from './host.ts';
import { readInstallation } from './link.ts';
import { forgetInstallation, type Scm } from './service.ts';

/** A tenant's links with their repository lists, `stale` where the host could not be read. */
export interface ListedInstallation extends ScmInstallation {
  stale: boolean;
}

/**
 * Lists a tenant's links, refreshing each repository list from the host. An unreachable host
 * leaves the last known list in place, marked stale: listing never fails because of the host.
 */
export async function listInstallations(scm: Scm, tenantId: string): Promise<ListedInstallation[]> {
  const stored = await listScmInstallations(scm.db, tenantId);
  return Promise.all(
    stored.map(async (inst): Promise<ListedInstallation> => {
      try {
        const repositories = await scm.host.repositories(await scm.tokens.get(inst.installationId));
        await updateScmRepositories(scm.db, tenantId, inst.installationId, repositories);
        return { ...inst, repositories, refreshedAt: new Date(), stale: false };
      } catch (err) {
        if (!(err instanceof HostError)) throw err;
        scm.log.warn({ tenant: tenantId, installation: inst.installationId, err: err.message }, 'scm: repository list not refreshed; serving the last known one');
        return { ...inst, stale: true };
      }
    }),
  );
}

export async function removeInstallation(scm: Scm, tenantId: string, installationId: number): Promise<void> {
  if (!(await deleteScmInstallation(scm.db, tenantId, installationId))) throw notFound(`installation ${installationId} is not linked to tenant ${tenantId}`);
  forgetInstallation(scm, installationId);
}

/**
 * Links an installation that already exists on the host without the browser flow (instance admins
 * only): the app's own JWT proves the installation belongs to this app.
 */
export async function attachInstallation(scm: Scm, tenantId: string, installationId: number, linkedBy: string): Promise<ScmInstallation> {
  let found: Awaited<ReturnType<typeof readInstallation>>;
  try {
    found = await readInstallation(scm, installationId);
  } catch (err) {
    if (err instanceof HostError) throw unavailable(`the source-control host could not be reached: ${err.message}`, { code: 'FLOE_ERR_SCM_HOST' });
    throw err;
  }
  if (!found) throw notFound(`the app has no installation ${installationId}`, { code: 'FLOE_ERR_SCM_INSTALLATION' });
  if (hasWritePermission(found.permissions)) {
    throw badData(`installation ${installationId} has write-capable permissions; only read-only contents and metadata are accepted`, { code: 'FLOE_ERR_SCM_PERMISSIONS' });
  }
  return upsertScmInstallation(scm.db, { tenantId, installationId, accountLogin: found.account.login, accountType: found.account.type, repositories: found.repositories, linkedBy });
}
