/**
 * @floe/router: every HTTP query surface (Tempo-compatible trace API today; LogQL, PromQL and
 * profiles later). Queries become SQL that a querier runs over Arrow Flight with a deadline.
 */
export { start } from './start.ts';
export type { SharedDeps } from './start.ts';
export { buildApp } from './app.ts';
