/**
 * @floe/router: every HTTP surface: the Tempo-compatible trace API (LogQL, PromQL and profiles
 * later), whose queries become SQL that a querier runs over Arrow Flight with a deadline; the
 * management API under /api/v1 with its live OpenAPI 3.1 document; and browser sessions under
 * /ui/session.
 */
export { start } from './start.ts';
export type { SharedDeps } from './start.ts';
export { buildApp } from './app.ts';
// The ruler's Alertmanager client (its tests run a real Alertmanager from @floe/testkit).
export { AlertmanagerNotifier } from './ruler/alertmanager.ts';
export type { AlertmanagerOptions, NotifiedAlert, NotifierStats } from './ruler/alertmanager.ts';
export type { ProvisionDataset } from './management/options.ts';
