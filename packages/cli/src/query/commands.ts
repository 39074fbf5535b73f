import type { Command } from 'commander';
import { registerQueryIrCommands } from './ir.ts';
import { registerLogCommands } from './logs.ts';
import { registerMetricCommands } from './metrics.ts';
import { registerProfileCommands } from './profiles.ts';
import { registerTraceCommands } from './traces.ts';

/**
 * `floe logs|metrics|traces|profiles|query …`: the router's query APIs from a terminal (spec 1, "a
 * command-line client whose verbs mirror the endpoints"). Each verb is one GET with the options
 * as URL parameters (`floe query`: a POST of the JSON IR), and prints the router's JSON body
 * unchanged; errors go to stderr with exit code 1, a usage mistake (a missing --tenant, IR that
 * is not JSON) exits 2.
 */
export function registerQueryCommands(program: Command): void {
  registerLogCommands(program);
  registerMetricCommands(program);
  registerTraceCommands(program);
  registerProfileCommands(program);
  registerQueryIrCommands(program);
}
