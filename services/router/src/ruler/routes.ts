import type { FastifyInstance, FastifyReply } from 'fastify';
import { requireScope } from '@floe/auth';
import { FloeError } from '@floe/errors';
import type { TenantLimits } from '@floe/limits';
import { deleteRuleGroups, isMetaError, listRuleGroups, putRuleGroup, type Db, type RuleLanguage, type StoredRuleGroup } from '@floe/meta';
import { formatPromFloat, parseRuleGroup, ruleGroupFromJson, ruleGroupToJson, ruleGroupToYaml, ruleNamespacesToYaml, type RuleGroup } from '@floe/query';
import { queryRouteSchema, type QueryApiTag, type QueryRouteDoc } from '../openapi.ts';
import type { ParamsRequest } from '../request-params.ts';
import { ruleName, ruleStateAt, type ActiveAlert, type GroupState, type RuleState } from './group-evaluation.ts';

/**
 * The ruler's HTTP surface of one query API: the Cortex/Mimir/Loki ruler config API (rule groups
 * as YAML per namespace: GET, POST, DELETE under RULE_CONFIG_PREFIXES), which Grafana's alerting
 * uses to manage data-source rules, and Prometheus's `/api/v1/rules` and `/api/v1/alerts` with
 * each rule's health and the active alerts of the last evaluation (saved by the evaluating router,
 * so every router answers alike).
 * Reading needs the query scope; changing rules also needs tenant:manage.
 */

export interface RuleRoutesOptions {
  db: Db;
  language: RuleLanguage;
  tag: QueryApiTag;
  /** Checks an alert template (throws on a syntax error). */
  checkTemplate: (text: string, where: string) => void;
  /** The tenant's ruler limits (limits.ruler_*, overridable per tenant). */
  limitsOf: (tenant: string) => Promise<Pick<TenantLimits, 'rulerMaxRuleGroups' | 'rulerMaxRulesPerGroup'>>;
}

/** Where each API serves the config API, with a name for its operation ids: Mimir's and Cortex's paths; Loki's and its legacy one. */
export const RULE_CONFIG_PREFIXES: Record<RuleLanguage, ReadonlyArray<readonly [string, string]>> = {
  promql: [
    ['/config/v1/rules', 'mimir'],
    ['/rules', 'cortex'],
  ],
  logql: [
    ['/loki/api/v1/rules', 'loki'],
    ['/api/prom/rules', 'loki_legacy'],
  ],
};

const RULES_BODY_LIMIT = 1024 * 1024;
const NAME = /^[^\u0000-\u001f/]{1,256}$/;

/** The config API answers writes as Cortex does: 202 and an empty success envelope. */
const accepted = (reply: FastifyReply) => reply.code(202).type('application/json').send({ status: 'success', data: null, errorType: '', error: '' });
const yaml = (reply: FastifyReply, text: string) => reply.code(200).type('application/yaml').send(text);

function pathName(value: string | undefined, what: string): string {
  const v = value ?? '';
  if (!NAME.test(v)) throw new FloeError('bad_data', `invalid ${what} name ${JSON.stringify(v.slice(0, 64))}`, { code: 'FLOE_ERR_RULES_PARAM' });
  return v;
}

/** The config API's routes, on `scope` (the query API's prefix). */
export async function ruleConfigRoutes(scope: FastifyInstance, opts: RuleRoutesOptions): Promise<void> {
  // A group's body is YAML whatever its Content-Type, as Mimir's and Cortex's rulers read it
  // (mimirtool sends application/yaml, `curl -d` a form type, some clients JSON, which is YAML):
  // the text as it came, never a form or JSON parse of it.
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'string', bodyLimit: RULES_BODY_LIMIT }, (_req, body, done) => done(null, body));
  const doc = (id: string, summary: string, more: QueryRouteDoc = {}) => queryRouteSchema(opts.tag, id, summary, more);
  const ns = { name: 'namespace', description: 'The rule namespace (a rule file’s name).' };
  const gr = { name: 'group', description: 'The rule group’s name.' };
  const scopeOf = (req: ParamsRequest) => ({ tenantId: req.tenant!.tenant, datasetId: req.tenant!.dataset, language: opts.language });
  const groupsOf = async (req: ParamsRequest, namespace?: string) => (await listRuleGroups(opts.db, { ...scopeOf(req), ...(namespace !== undefined ? { namespace } : {}) })).map(readGroup);

  const listAll = async (req: ParamsRequest, reply: FastifyReply) => {
    const groups = await groupsOf(req);
    if (groups.length === 0) throw new FloeError('not_found', 'no rule groups found', { code: 'FLOE_ERR_RULES_NOT_FOUND' });
    return yaml(reply, ruleNamespacesToYaml(byNamespace(groups)));
  };
  const listNamespace = async (req: ParamsRequest, reply: FastifyReply) => {
    const namespace = pathName(req.params.namespace, 'namespace');
    const groups = await groupsOf(req, namespace);
    if (groups.length === 0) throw new FloeError('not_found', 'no rule groups found', { code: 'FLOE_ERR_RULES_NOT_FOUND' });
    return yaml(reply, ruleNamespacesToYaml(byNamespace(groups)));
  };
  const getGroup = async (req: ParamsRequest, reply: FastifyReply) => {
    const namespace = pathName(req.params.namespace, 'namespace');
    const name = pathName(req.params.group, 'group');
    const [found] = await listRuleGroups(opts.db, { ...scopeOf(req), namespace, name });
    if (!found) throw new FloeError('not_found', 'group does not exist', { code: 'FLOE_ERR_RULES_NOT_FOUND' });
    return yaml(reply, ruleGroupToYaml(readGroup(found).group));
  };
  const setGroup = async (req: ParamsRequest, reply: FastifyReply) => {
    requireScope(req.tenant!.scopes, 'tenant:manage');
    const namespace = pathName(req.params.namespace, 'namespace');
    const text = typeof req.body === 'string' ? req.body : '';
    if (text.trim() === '') throw new FloeError('bad_data', 'the body must be a rule group in YAML', { code: 'FLOE_ERR_RULES_BODY' });
    const group = parseRuleGroup(text, { language: opts.language, checkTemplate: opts.checkTemplate });
    pathName(group.name, 'group');
    const limits = await opts.limitsOf(req.tenant!.tenant);
    if (group.rules.length > limits.rulerMaxRulesPerGroup) {
      throw new FloeError('bad_data', `per-group rules limit exceeded: ${group.rules.length} rules, at most ${limits.rulerMaxRulesPerGroup} (limits.ruler_max_rules_per_rule_group)`, { code: 'FLOE_ERR_RULES_LIMIT' });
    }
    try {
      await putRuleGroup(opts.db, { ...scopeOf(req), namespace, name: group.name }, ruleGroupToJson(group), limits.rulerMaxRuleGroups);
    } catch (err) {
      if (isMetaError(err) && err.kind === 'bad_data') throw new FloeError('bad_data', err.message, { code: 'FLOE_ERR_RULES_LIMIT' });
      throw err;
    }
    req.log.info({ tenant: req.tenant!.tenant, dataset: req.tenant!.dataset, namespace, group: group.name, rules: group.rules.length }, 'rule group set');
    return accepted(reply);
  };
  const deleteGroup = async (req: ParamsRequest, reply: FastifyReply) => {
    requireScope(req.tenant!.scopes, 'tenant:manage');
    const namespace = pathName(req.params.namespace, 'namespace');
    const name = pathName(req.params.group, 'group');
    if ((await deleteRuleGroups(opts.db, { ...scopeOf(req), namespace, name })) === 0) throw new FloeError('not_found', 'group does not exist', { code: 'FLOE_ERR_RULES_NOT_FOUND' });
    return accepted(reply);
  };
  const deleteNamespace = async (req: ParamsRequest, reply: FastifyReply) => {
    requireScope(req.tenant!.scopes, 'tenant:manage');
    const namespace = pathName(req.params.namespace, 'namespace');
    if ((await deleteRuleGroups(opts.db, { ...scopeOf(req), namespace })) === 0) throw new FloeError('not_found', 'namespace does not exist', { code: 'FLOE_ERR_RULES_NOT_FOUND' });
    return accepted(reply);
  };

  const yamlReturns = (what: string) => ({ returns: { description: `YAML: ${what}.`, mediaTypes: ['application/yaml'] } });
  for (const [prefix, flavour] of RULE_CONFIG_PREFIXES[opts.language]) {
    const id = (op: string) => `${op}_${flavour}`;
    const nsDoc = { pathParameters: [ns] };
    const groupDoc = { pathParameters: [ns, gr] };
    scope.get(prefix, { schema: doc(id('list_rule_groups'), 'All rule groups of the dataset, by namespace', yamlReturns('namespace → list of groups; 404 when there are none')) }, listAll);
    scope.get(`${prefix}/:namespace`, { schema: doc(id('list_namespace_rule_groups'), 'The rule groups of one namespace', { ...nsDoc, ...yamlReturns('namespace → list of groups') }) }, listNamespace);
    scope.get(`${prefix}/:namespace/:group`, { schema: doc(id('get_rule_group'), 'One rule group', { ...groupDoc, ...yamlReturns('the group') }) }, getGroup);
    scope.post(`${prefix}/:namespace`, { schema: doc(id('set_rule_group'), 'Create or replace a rule group (its YAML as the body); needs tenant:manage', { ...nsDoc, rawBody: { mediaTypes: ['application/yaml'], description: 'One Prometheus rule group in YAML.' } }) }, setGroup);
    scope.delete(`${prefix}/:namespace/:group`, { schema: doc(id('delete_rule_group'), 'Delete a rule group; needs tenant:manage', groupDoc) }, deleteGroup);
    scope.delete(`${prefix}/:namespace`, { schema: doc(id('delete_rule_namespace'), 'Delete every group of a namespace; needs tenant:manage', nsDoc) }, deleteNamespace);
  }
}

interface ReadGroup {
  stored: StoredRuleGroup;
  group: RuleGroup;
}

const readGroup = (stored: StoredRuleGroup): ReadGroup => ({ stored, group: ruleGroupFromJson(stored.definition) });

function byNamespace(groups: readonly ReadGroup[]): Map<string, RuleGroup[]> {
  const out = new Map<string, RuleGroup[]>();
  for (const g of groups) {
    const list = out.get(g.stored.namespace) ?? [];
    list.push(g.group);
    out.set(g.stored.namespace, list);
  }
  return out;
}

const iso = (ms: number | undefined) => (ms === undefined ? '0001-01-01T00:00:00Z' : new Date(ms).toISOString());
/** Prometheus prints alert values with %e. */
const alertValue = (v: number) => (Number.isFinite(v) ? v.toExponential().replace(/e([+-])(\d)$/, 'e$10$2') : formatPromFloat(v));

function alertJson(a: ActiveAlert) {
  return { labels: a.labels, annotations: a.annotations, state: a.state, activeAt: iso(a.activeAt), value: alertValue(a.value), ...(a.keepFiringSince !== undefined ? { keepFiringSince: iso(a.keepFiringSince) } : {}) };
}

const ruleStateOf = (alerts: readonly ActiveAlert[]) => (alerts.some((a) => a.state === 'firing') ? 'firing' : alerts.some((a) => a.state === 'pending') ? 'pending' : 'inactive');

/** Prometheus's `/api/v1/rules` and `/api/v1/alerts` from the saved states, on `scope` (…/api/v1). */
export function ruleStateRoutes(scope: FastifyInstance, opts: Pick<RuleRoutesOptions, 'db' | 'language' | 'tag'> & { evaluationIntervalMs: number }): void {
  // The operation ids the empty lists had before the ruler: list_metric_rules, list_log_alerts, …
  const kind = opts.tag === 'metrics' ? 'metric' : 'log';
  const doc = (id: string, summary: string, more: QueryRouteDoc = {}) => queryRouteSchema(opts.tag, id.replace('*', kind), summary, more);
  const groupsOf = async (req: ParamsRequest) => (await listRuleGroups(opts.db, { tenantId: req.tenant!.tenant, datasetId: req.tenant!.dataset, language: opts.language })).map(readGroup);
  const active = (state: RuleState) => state.alerts.filter((a) => a.state !== 'inactive');

  scope.get(
    '/rules',
    {
      schema: doc('list_*_rules', 'Recording and alerting rules with their health and active alerts', {
        queryParameters: [
          { name: 'type', description: '`alert` or `record`: only rules of that type.' },
          { name: 'rule_name[]', description: 'Only rules of these names.' },
          { name: 'rule_group[]', description: 'Only groups of these names.' },
          { name: 'file[]', description: 'Only groups of these namespaces.' },
          { name: 'exclude_alerts', description: '`true`: leave the active alerts out.' },
        ],
        returns: { description: '`{"status":"success","data":{"groups":[…]}}` as Prometheus.' },
      }),
    },
    async (req: ParamsRequest, reply) => {
      const q = new URLSearchParams(req.url.slice(req.url.indexOf('?') + 1 || req.url.length));
      const type = q.get('type');
      if (type !== null && type !== 'alert' && type !== 'record') throw new FloeError('bad_data', `invalid parameter "type": ${JSON.stringify(type)} (alert or record)`, { code: 'FLOE_ERR_RULES_PARAM' });
      const names = new Set(q.getAll('rule_name[]'));
      const groupNames = new Set(q.getAll('rule_group[]'));
      const files = new Set(q.getAll('file[]'));
      const excludeAlerts = q.get('exclude_alerts') === 'true';
      const groups = [];
      for (const { stored, group } of await groupsOf(req)) {
        if (groupNames.size > 0 && !groupNames.has(group.name)) continue;
        if (files.size > 0 && !files.has(stored.namespace)) continue;
        const state = stored.state as GroupState | null;
        const rules = [];
        for (let i = 0; i < group.rules.length; i++) {
          const rule = group.rules[i]!;
          if (type === 'alert' && rule.kind !== 'alerting') continue;
          if (type === 'record' && rule.kind !== 'recording') continue;
          if (names.size > 0 && !names.has(ruleName(rule))) continue;
          const s = ruleStateAt(state, rule, i);
          const common = { name: ruleName(rule), query: rule.expr, labels: rule.labels, health: s.health, evaluationTime: s.evaluationTime, lastEvaluation: iso(s.lastEvaluation), ...(s.lastError ? { lastError: s.lastError } : {}) };
          if (rule.kind === 'recording') {
            rules.push({ ...common, type: 'recording' });
            continue;
          }
          const alerts = active(s);
          rules.push({
            ...common,
            type: 'alerting',
            state: ruleStateOf(alerts),
            duration: rule.forMs / 1000,
            keepFiringFor: rule.keepFiringForMs / 1000,
            annotations: rule.annotations,
            ...(excludeAlerts ? {} : { alerts: alerts.map(alertJson) }),
          });
        }
        if ((names.size > 0 || type !== null) && rules.length === 0) continue;
        groups.push({
          name: group.name,
          file: stored.namespace,
          rules,
          interval: (group.intervalMs ?? opts.evaluationIntervalMs) / 1000,
          limit: group.limit ?? 0,
          evaluationTime: state?.evaluationTime ?? 0,
          lastEvaluation: iso(state?.lastEvaluation),
        });
      }
      return reply.type('application/json').send({ status: 'success', data: { groups } });
    },
  );

  scope.get('/alerts', { schema: doc('list_*_alerts', 'Active (pending and firing) alerts', { returns: { description: '`{"status":"success","data":{"alerts":[…]}}` as Prometheus.' } }) }, async (req: ParamsRequest, reply) => {
    const alerts = [];
    for (const { stored } of await groupsOf(req)) {
      const state = stored.state as GroupState | null;
      for (const r of state?.rules ?? []) alerts.push(...active(r).map(alertJson));
    }
    return reply.type('application/json').send({ status: 'success', data: { alerts } });
  });
}
