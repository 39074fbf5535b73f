import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { seg } from '@floe/client';
import { repeatable, UsageError } from '../command-helpers.ts';
import { queryVerb } from './verb.ts';

/**
 * The ruler's verbs of one query API (`floe metrics …` with PromQL rules, `floe logs …` with LogQL
 * ones): rule groups through the ruler config API (YAML in and out, as Mimir's and Loki's
 * `mimirtool`/`lokitool rules` use it) and the evaluated state of rules and alerts.
 */
export interface RulePaths {
  /** The command prefix in help texts (`metrics`, `logs`). */
  name: string;
  /** The config API's base (metricquery/config/v1/rules). */
  config: string;
  /** The Prometheus-style state API's base (metricquery/api/v1). */
  state: string;
}

interface StateFilters {
  type?: string;
  group?: string[];
  namespace?: string[];
  rule?: string[];
  excludeAlerts?: boolean;
}

function readRuleFile(path: string): string {
  try {
    return readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${path === '-' ? 'standard input' : path}: ${(err as Error).message}`);
  }
}

export function registerRuleCommands(parent: Command, paths: RulePaths): void {
  /** The config API's path of all groups, a namespace or one group. */
  const configPath = (...names: Array<string | undefined>) => [paths.config, ...names.filter((n) => n !== undefined).map(seg)].join('/');

  queryVerb<StateFilters>(
    parent
      .command('rules')
      .description('rule groups with each rule’s health, last evaluation and active alerts')
      .option('--type <alert|record>', 'only alerting or only recording rules')
      .option('--group <name>', 'only this group (repeatable)', repeatable)
      .option('--namespace <name>', 'only groups of this namespace (repeatable)', repeatable)
      .option('--rule <name>', 'only rules of this name (repeatable)', repeatable)
      .option('--exclude-alerts', 'leave the active alerts out'),
    `${paths.name} rules`,
    (_args, o) => ({
      path: `${paths.state}/rules`,
      query: { type: o.type, 'rule_group[]': o.group, 'file[]': o.namespace, 'rule_name[]': o.rule, exclude_alerts: o.excludeAlerts ? 'true' : undefined },
    }),
  );
  queryVerb(parent.command('alerts').description('pending and firing alerts'), `${paths.name} alerts`, () => ({ path: `${paths.state}/alerts` }));

  queryVerb(
    parent
      .command('rule-groups')
      .description('rule groups as YAML: all of them by namespace, one namespace’s, or one group')
      .argument('[namespace]', 'only this namespace')
      .argument('[group]', 'only this group of the namespace'),
    `${paths.name} rule-groups`,
    ([namespace, group]) => ({ path: configPath(namespace, group) }),
  );
  queryVerb(
    parent
      .command('set-rule-group')
      .description('create or replace a rule group from a YAML file holding one group (- reads standard input); needs tenant:manage')
      .argument('<namespace>', 'the namespace (a rule file’s name)')
      .argument('<file>', 'YAML of one group: name, interval, rules'),
    `${paths.name} set-rule-group`,
    ([namespace, file]) => ({ method: 'POST', path: configPath(namespace), rawBody: { text: readRuleFile(file!), contentType: 'application/yaml' } }),
  );
  queryVerb(
    parent
      .command('delete-rule-group')
      .description('delete one rule group, or a whole namespace when no group is named; needs tenant:manage')
      .argument('<namespace>', 'the namespace')
      .argument('[group]', 'the group (absent: every group of the namespace)'),
    `${paths.name} delete-rule-group`,
    ([namespace, group]) => ({ method: 'DELETE', path: configPath(namespace, group) }),
  );
}
