import type { Command } from 'commander';
import { registerLogCommands } from './logs.ts';
import { registerMetricCommands } from './metrics.ts';
import { registerProfileCommands } from './profiles.ts';
import { registerTraceCommands } from './traces.ts';

/**
 * `floe logs|metrics|traces|profiles …`: the router's query APIs from a terminal (spec 1, "a
 * command-line client whose verbs mirror the endpoints"). Each verb is one GET with the options
 * as URL parameters, and prints the router's JSON body unchanged; errors go to stderr with exit
 * code 1, a missing --tenant is a usage error (exit 2).
 */
export function registerQueryCommands(program: Command): void {
  registerLogCommands(program);
  registerMetricCommands(program);
  registerTraceCommands(program);
  registerProfileCommands(program);
}
