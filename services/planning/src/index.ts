/**
 * @floe/planning: the separate product-planning REST API (spec 3), modelled on a product
 * management tool's public API v1: products (workspaces) hold releases, features, epics, goals,
 * initiatives and competitors; features live in releases; records carry a workflow status from
 * their product's workflow, tags, custom fields and comments, and are named by numeric id or
 * reference number (PRJ1-12, PRJ1-R-3, PRJ1-E-2).
 *
 * Records live in the metadata DB (PGlite or PostgreSQL, tables planning_* from @floe/meta's
 * migrations), every row and every statement scoped to the caller's Floe tenant. Callers are
 * Floe API keys (Bearer) or Floe users (Basic + X-Tenant-ID); each tenant spends its own token
 * bucket. `start(config)` serves it on planning.port; `buildApp` builds it without listening.
 */
export { start } from './start.ts';
export type { PlanningDeps } from './start.ts';
export { buildApp } from './app.ts';
export type { PlanningAppOptions } from './app.ts';
