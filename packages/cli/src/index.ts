/**
 * @floe/cli: the `floe` command and the composition of services (`startFloe`), which the
 * test kit reuses to run real Floe in-process.
 */
export { startFloe, type StartedFloe } from './compose.ts';
export { TARGETS } from './targets.ts';
export { rowsOf, formatTable } from './sql-command.ts';
