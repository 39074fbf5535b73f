import type { FastifyPluginAsync } from 'fastify';
import { openApiRoute, type CollectedRoute } from '../openapi.ts';
import { datasetRoutes } from './datasets.ts';
import { useManagementJsonBodies } from './json-body.ts';
import { keyRoutes } from './keys.ts';
import { membershipRoutes } from './memberships.ts';
import { opsRoutes } from './ops.ts';
import type { ManagementOptions } from './options.ts';
import { principalPlugin } from './principal-plugin.ts';
import { schemaRegistryRoutes } from './schema-registry.ts';
import { storableTextPlugin } from './storable-text.ts';
import { schemaResolutionRoutes } from './schema-resolution.ts';
import { tableRoutes } from './tables.ts';
import { tenantSchemaRoutes } from './tenant-schemas.ts';
import { tenantRoutes } from './tenants.ts';
import { userRoutes } from './users.ts';
import { whoamiRoutes } from './whoami.ts';

/** The management API, mounted at /api/v1: every route resolves its caller first. */
export const managementPlugin: FastifyPluginAsync<ManagementOptions & { routes: readonly CollectedRoute[] }> = async (app, opts) => {
  useManagementJsonBodies(app);
  await app.register(principalPlugin, { auth: opts.auth });
  await app.register(storableTextPlugin);
  await app.register(openApiRoute, { routes: opts.routes });
  const deps: ManagementOptions = { db: opts.db, auth: opts.auth, provisionDataset: opts.provisionDataset, tables: opts.tables, compactor: opts.compactor };
  for (const routes of [tenantRoutes, datasetRoutes, tableRoutes, userRoutes, membershipRoutes, keyRoutes, whoamiRoutes, opsRoutes, tenantSchemaRoutes, schemaRegistryRoutes, schemaResolutionRoutes]) await app.register(routes, deps);
};
