import type { RuleLanguage } from './model.ts';

/**
 * Rule files for the tests: rule-groups.test.ts checks what Floe's parser makes of each, and
 * promtool.test.ts that Prometheus's own `promtool check rules` accepts and refuses the same ones.
 * `promtool` says why a file cannot be compared when it cannot: Debian's promtool is Prometheus
 * 2.42 (older than group labels and query_offset), knows no LogQL, and a few refusals here are
 * deliberate departures from it.
 */
export interface RuleFixture {
  name: string;
  language: RuleLanguage;
  text: string;
  /** The whole FloeError message; absent when the file is valid. */
  error?: string;
  /** Why promtool is not asked about this file. */
  promtool?: string;
}

const PROMETHEUS_3 = 'a Prometheus 3 feature; promtool 2.42 does not know the field';
const LOGQL = 'LogQL: promtool checks PromQL only';

export const VALID: readonly RuleFixture[] = [
  {
    name: 'Prometheus 2 file with every rule field',
    language: 'promql',
    text: `# Recording and alerting rules for the API.
groups:
  - name: api
    interval: 90s
    limit: 10
    rules:
      - record: job:http_requests:rate5m
        expr: sum by (job) (rate(http_requests_total[5m]))
        labels:
          team: platform
          version: 1.10
      - alert: HighLatency
        expr: |
          histogram_quantile(0.99,
            sum by (le, job) (rate(http_request_duration_seconds_bucket[5m]))
          ) > 0.5
        for: 10m
        keep_firing_for: 5m
        labels:
          severity: page
          empty: ""
        annotations:
          summary: 'High latency on {{ $labels.job }}'
          description: "p99 is {{ $value | humanizeDuration }}"
      - alert: AlwaysFiring
        expr: vector(1)
  - name: quiet
    interval: 0
    rules:
      - record: "instance:up:count"
        expr: count by (instance) (up)
        for: 0s
        keep_firing_for: 0s
        annotations: {}
`,
  },
  {
    name: 'anchors, aliases and merge keys',
    language: 'promql',
    text: `groups:
  - name: shared
    rules:
      - alert: A
        expr: up == 0
        labels: &common
          team: db
          severity: warn
      - alert: B
        expr: up == 0
        labels:
          <<: *common
          severity: page
`,
  },
  { name: 'empty file', language: 'promql', text: '' },
  { name: 'groups with nothing', language: 'promql', text: 'groups:\n' },
  { name: 'group without rules', language: 'promql', text: 'groups:\n  - name: empty\n    rules: []\n' },
  {
    name: 'JSON (a YAML flow document)',
    language: 'promql',
    text: '{"groups": [{"name": "a", "interval": "1m", "rules": [{"record": "x:y", "expr": "sum(up)"}, {"record": "one", "expr": 1}]}]}',
  },
  {
    name: 'Prometheus 3 group fields',
    language: 'promql',
    text: `groups:
  - name: offset
    interval: 1m
    query_offset: 30s
    labels:
      cluster: eu-1
    rules:
      - record: cluster:up:sum
        expr: sum(up)
`,
    promtool: PROMETHEUS_3,
  },
  {
    name: 'Loki rules',
    language: 'logql',
    text: `groups:
  - name: checkout-errors
    interval: 1m
    rules:
      - record: service:log_errors:rate1m
        expr: sum by (service_name) (rate({service_name="checkout"} |= "error" [1m]))
      - alert: CheckoutErrors
        expr: |
          sum by (service_name) (count_over_time({service_name="checkout"} | json | level="error" [5m])) > 10
        for: 2m
        labels:
          severity: ticket
        annotations:
          summary: "{{ $labels.service_name }} logs errors"
`,
    promtool: LOGQL,
  },
];

/** One rule, indented under `groups: - name: g  rules:`. */
const oneRule = (rule: string, group = '') => `groups:\n  - name: g\n${group}    rules:\n      - ${rule.trim().replaceAll('\n', '\n        ')}\n`;

export const INVALID: readonly RuleFixture[] = [
  {
    name: 'YAML syntax error',
    language: 'promql',
    text: 'groups: [\n',
    error: 'yaml: line 2, col 1: Flow sequence in block collection must be sufficiently indented and end with a ]',
  },
  {
    name: 'tab indentation',
    language: 'promql',
    text: 'groups:\n\t- name: a\n',
    error: 'yaml: line 2, col 1: Tabs are not allowed as indentation',
  },
  {
    name: 'duplicate key',
    language: 'promql',
    text: 'groups:\n  - name: a\n    name: b\n    rules: []\n',
    error: 'yaml: line 3, col 5: Map keys must be unique',
  },
  {
    name: 'second YAML document',
    language: 'promql',
    text: 'groups: []\n---\ngroups: []\n',
    error: 'yaml: line 2, col 1: a rule file is one YAML document, this has more',
    promtool: 'deliberate: Prometheus silently ignores every document after the first',
  },
  {
    name: 'unknown top-level field',
    language: 'promql',
    text: 'groups: []\nfoo: 1\n',
    error: 'yaml: line 2: field foo not found in type rulefmt.RuleGroups',
  },
  {
    name: 'unknown group field',
    language: 'promql',
    text: 'groups:\n  - name: a\n    foo: 1\n    rules: []\n',
    error: 'yaml: line 3: field foo not found in type rulefmt.RuleGroup',
  },
  {
    name: 'unknown rule field',
    language: 'promql',
    text: oneRule('record: x\nexpr: up\nbar: 2'),
    error: 'yaml: line 6: field bar not found in type rulefmt.RuleNode',
  },
  {
    name: 'file that is a list',
    language: 'promql',
    text: '- a\n',
    error: 'yaml: line 1: cannot unmarshal !!seq into rulefmt.RuleGroups',
  },
  {
    name: 'groups that is a map',
    language: 'promql',
    text: 'groups: {a: b}\n',
    error: 'yaml: line 1: cannot unmarshal !!map into []rulefmt.RuleGroup',
  },
  {
    name: 'group name that is a list',
    language: 'promql',
    text: 'groups:\n  - name: [a]\n    rules: []\n',
    error: 'yaml: line 2: cannot unmarshal !!seq into string',
  },
  {
    name: 'label value that is a map',
    language: 'promql',
    text: oneRule('record: x\nexpr: up\nlabels: {a: {b: c}}'),
    error: 'yaml: line 6: cannot unmarshal !!map into string',
  },
  {
    name: 'limit that is a string',
    language: 'promql',
    text: 'groups:\n  - name: a\n    limit: "5"\n    rules: []\n',
    error: 'yaml: line 3: cannot unmarshal !!str `5` into int',
  },
  {
    name: 'limit that is not whole',
    language: 'promql',
    text: 'groups:\n  - name: a\n    limit: 1.5\n    rules: []\n',
    error: 'yaml: line 3: cannot unmarshal !!float `1.5` into int',
    promtool: 'deliberate: Prometheus (yaml.v3) truncates 1.5 to 1',
  },
  {
    name: 'negative limit',
    language: 'promql',
    text: 'groups:\n  - name: a\n    limit: -1\n    rules: []\n',
    error: 'group "a": invalid limit -1: must be a non-negative integer (0 is no limit)',
    promtool: 'deliberate: Prometheus accepts a negative limit and treats it as none',
  },
  {
    name: 'empty group name',
    language: 'promql',
    text: 'groups:\n  - name: a\n    rules: []\n  - name: ""\n    rules: []\n  - rules: []\n',
    error: 'group 2: Groupname must not be empty; group 3: Groupname must not be empty',
  },
  {
    name: 'repeated group name',
    language: 'promql',
    text: 'groups:\n  - name: a\n    rules: []\n  - name: a\n    rules: []\n',
    error: 'groupname: "a" is repeated in the same file',
  },
  {
    name: 'interval without a unit',
    language: 'promql',
    text: 'groups:\n  - name: a\n    interval: 30\n    rules: []\n',
    error: `group "a": invalid 'interval': not a valid duration string: "30"`,
  },
  {
    name: 'query_offset that is not a duration',
    language: 'promql',
    text: 'groups:\n  - name: a\n    query_offset: soon\n    rules: []\n',
    error: `group "a": invalid 'query_offset': not a valid duration string: "soon"`,
    promtool: PROMETHEUS_3,
  },
  {
    name: 'bad group labels',
    language: 'promql',
    text: 'groups:\n  - name: a\n    labels: {"bad-name": x, __name__: y}\n    rules: []\n',
    error: `group "a": invalid label name: bad-name; group "a": invalid label name: __name__ (a rule's labels cannot set the metric name)`,
    promtool: PROMETHEUS_3,
  },
  {
    name: 'record and alert both set',
    language: 'promql',
    text: oneRule('record: x\nalert: Y\nexpr: up'),
    error: `group "g", rule 1, "Y": only one of 'record' and 'alert' must be set`,
  },
  {
    name: 'neither record nor alert',
    language: 'promql',
    text: oneRule('expr: up'),
    error: `group "g", rule 1, "": one of 'record' or 'alert' must be set`,
  },
  {
    name: 'no expr',
    language: 'promql',
    text: oneRule('alert: NoExpr\nfor: 1m'),
    error: `group "g", rule 1, "NoExpr": field 'expr' must be set in rule`,
  },
  {
    name: 'PromQL that does not parse',
    language: 'promql',
    text: oneRule('record: x\nexpr: sum(rate(up[5m])'),
    error: `group "g", rule 1, "x": could not parse expression: parse error at line 1, col 17: unexpected end of input`,
  },
  {
    name: 'invalid recording rule name',
    language: 'promql',
    text: oneRule('record: foo bar\nexpr: up'),
    error: `group "g", rule 1, "foo bar": invalid recording rule name: foo bar`,
  },
  {
    name: 'alerting fields on a recording rule',
    language: 'promql',
    text: oneRule('record: x\nexpr: up\nfor: 1m\nkeep_firing_for: 1m\nannotations: {a: b}'),
    error: [
      `group "g", rule 1, "x": invalid field 'annotations' in recording rule`,
      `group "g", rule 1, "x": invalid field 'for' in recording rule`,
      `group "g", rule 1, "x": invalid field 'keep_firing_for' in recording rule`,
    ].join('; '),
  },
  {
    name: 'for without a unit',
    language: 'promql',
    text: oneRule('alert: A\nexpr: up\nfor: 5'),
    error: `group "g", rule 1, "A": invalid 'for': not a valid duration string: "5"`,
  },
  {
    name: 'keep_firing_for with units out of order',
    language: 'promql',
    text: oneRule('alert: A\nexpr: up\nkeep_firing_for: 1m1h'),
    error: `group "g", rule 1, "A": invalid 'keep_firing_for': not a valid duration string: "1m1h"`,
  },
  {
    name: 'negative for',
    language: 'promql',
    text: oneRule('alert: A\nexpr: up\nfor: -1m'),
    error: `group "g", rule 1, "A": invalid 'for': not a valid duration string: "-1m"`,
  },
  {
    name: 'invalid label name',
    language: 'promql',
    text: oneRule('alert: A\nexpr: up\nlabels: {"bad-name": x}'),
    error: `group "g", rule 1, "A": invalid label name: bad-name`,
  },
  {
    name: '__name__ label on a recording rule',
    language: 'promql',
    text: oneRule('record: x\nexpr: up\nlabels: {__name__: y}'),
    error: `group "g", rule 1, "x": invalid label name: __name__ (a rule's labels cannot set the metric name)`,
  },
  {
    name: '__name__ label on an alerting rule',
    language: 'promql',
    text: oneRule('alert: A\nexpr: up\nlabels: {__name__: y}'),
    error: `group "g", rule 1, "A": invalid label name: __name__ (a rule's labels cannot set the metric name)`,
  },
  {
    name: 'label value that is not UTF-8',
    language: 'promql',
    text: oneRule('record: x\nexpr: up\nlabels: {a: "q\\ud800"}'),
    error: `group "g", rule 1, "x": invalid label value: "q\\ud800" (not valid UTF-8)`,
  },
  {
    name: 'invalid annotation name',
    language: 'promql',
    text: oneRule('alert: A\nexpr: up\nannotations: {"bad name": x}'),
    error: `group "g", rule 1, "A": invalid annotation name: bad name`,
  },
  {
    name: 'LogQL log query as a rule',
    language: 'logql',
    text: oneRule('alert: Errors\nexpr: \'{service_name="checkout"} |= "error"\''),
    error: `group "g", rule 1, "Errors": could not parse expression: only sample expression supported: a Loki rule must be a metric query such as sum(rate({app="api"} |= "error" [5m])), not a log query`,
    promtool: LOGQL,
  },
  {
    name: 'LogQL that does not parse',
    language: 'logql',
    text: oneRule('record: x\nexpr: rate({service_name="checkout"}[5m]'),
    error: `group "g", rule 1, "x": could not parse expression: parse error at line 1, col 35: unexpected end of query`,
    promtool: LOGQL,
  },
  {
    name: 'several problems at once',
    language: 'promql',
    text: 'groups:\n  - name: a\n    rules:\n      - record: x\n        alert: y\n      - expr: up\n  - name: a\n    rules: []\n',
    error: [
      `group "a", rule 1, "y": only one of 'record' and 'alert' must be set`,
      `group "a", rule 1, "y": field 'expr' must be set in rule`,
      `group "a", rule 2, "": one of 'record' or 'alert' must be set`,
      `groupname: "a" is repeated in the same file`,
    ].join('; '),
  },
];
