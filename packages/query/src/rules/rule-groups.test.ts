import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { INVALID, VALID } from './fixtures.ts';
import {
  MAX_RULE_TEXT_BYTES,
  MAX_RULES_PER_GROUP,
  parseRuleFile,
  parseRuleGroup,
  ruleGroupFromJson,
  ruleGroupToJson,
  ruleGroupToYaml,
  ruleNamespacesToYaml,
  RULES_ERROR_CODE,
  type RuleCheckOptions,
  type RuleGroup,
} from './rule-groups.ts';

const PROMQL: RuleCheckOptions = { language: 'promql' };
const LOGQL: RuleCheckOptions = { language: 'logql' };

/** The FloeError a call throws (failing the test when it throws nothing or something else). */
function refusal(f: () => unknown): FloeError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(FloeError);
    return err as FloeError;
  }
  throw new Error('expected a refusal, got none');
}

describe('valid rule files', () => {
  for (const fx of VALID) {
    it(`${fx.name}: parses, and each group round-trips through YAML and JSON`, () => {
      const opts = { language: fx.language };
      const groups = parseRuleFile(fx.text, opts);
      for (const g of groups) {
        expect(parseRuleGroup(ruleGroupToYaml(g), opts)).toEqual(g);
        expect(ruleGroupFromJson(JSON.parse(JSON.stringify(ruleGroupToJson(g))))).toEqual(g);
      }
      // A namespace's groups are a rule file's: a namespace named "groups" writes one.
      expect(parseRuleFile(ruleNamespacesToYaml({ groups }), opts)).toEqual(groups);
    });
  }

  it('reads every field into the model, durations in ms and as written', () => {
    const [api, quiet] = parseRuleFile(VALID[0]!.text, PROMQL);
    expect(api).toEqual({
      name: 'api',
      intervalMs: 90_000,
      intervalText: '90s',
      limit: 10,
      labels: {},
      rules: [
        { kind: 'recording', record: 'job:http_requests:rate5m', expr: 'sum by (job) (rate(http_requests_total[5m]))', labels: { team: 'platform', version: '1.10' } },
        {
          kind: 'alerting',
          alert: 'HighLatency',
          expr: 'histogram_quantile(0.99,\n  sum by (le, job) (rate(http_request_duration_seconds_bucket[5m]))\n) > 0.5\n',
          forMs: 600_000,
          forText: '10m',
          keepFiringForMs: 300_000,
          keepFiringForText: '5m',
          labels: { severity: 'page', empty: '' },
          annotations: { summary: 'High latency on {{ $labels.job }}', description: 'p99 is {{ $value | humanizeDuration }}' },
        },
        { kind: 'alerting', alert: 'AlwaysFiring', expr: 'vector(1)', forMs: 0, keepFiringForMs: 0, labels: {}, annotations: {} },
      ],
    } satisfies RuleGroup);
    // interval 0 is "the default": no intervalMs, but written back as it was; for: 0s on a recording rule is dropped.
    expect(quiet).toEqual({
      name: 'quiet',
      intervalText: '0',
      labels: {},
      rules: [{ kind: 'recording', record: 'instance:up:count', expr: 'count by (instance) (up)', labels: {} }],
    });
  });

  it('expands aliases and merge keys as yaml.v3 does: a key written in the map wins', () => {
    const [g] = parseRuleFile(VALID[1]!.text, PROMQL);
    expect(g!.rules.map((r) => r.labels)).toEqual([
      { team: 'db', severity: 'warn' },
      { team: 'db', severity: 'page' },
    ]);
  });

  it('reads Prometheus 3 group fields and a plain-number expr as written', () => {
    const [g] = parseRuleFile(VALID.find((f) => f.name === 'Prometheus 3 group fields')!.text, PROMQL);
    expect(g).toMatchObject({ intervalMs: 60_000, queryOffsetMs: 30_000, queryOffsetText: '30s', labels: { cluster: 'eu-1' } });
    const [j] = parseRuleFile(VALID.find((f) => f.name.startsWith('JSON'))!.text, PROMQL);
    expect(j!.rules[1]).toEqual({ kind: 'recording', record: 'one', expr: '1', labels: {} });
  });

  it('takes a label named __proto__ as an ordinary label', () => {
    const [g] = parseRuleFile('groups:\n  - name: a\n    rules:\n      - alert: A\n        expr: up\n        labels: {__proto__: x}\n', PROMQL);
    expect(Object.entries(g!.rules[0]!.labels)).toEqual([['__proto__', 'x']]);
    expect(parseRuleGroup(ruleGroupToYaml(g!), PROMQL)).toEqual(g);
  });
});

describe('invalid rule files', () => {
  for (const fx of INVALID) {
    it(`${fx.name}: refused as bad_data`, () => {
      const err = refusal(() => parseRuleFile(fx.text, { language: fx.language }));
      expect(err.kind).toBe('bad_data');
      expect(err.code).toBe(RULES_ERROR_CODE);
      expect(err.message).toBe(fx.error);
    });
  }

  it('positions the error at the first problem in the file', () => {
    const err = refusal(() => parseRuleFile('groups:\n  - name: a\n    rules:\n      - record: x\n        expr: up\n      - record: "bad name"\n        expr: up\n', PROMQL));
    expect(err.position).toEqual({ line: 6, column: 9 });
  });

  it('lists at most 20 problems and counts the rest', () => {
    const rules = Array.from({ length: 25 }, (_, i) => `      - record: "bad ${i}"\n        expr: up\n`).join('');
    const err = refusal(() => parseRuleFile(`groups:\n  - name: a\n    rules:\n${rules}`, PROMQL));
    expect(err.message.split('; ')).toHaveLength(21);
    expect(err.message).toMatch(/; \(and 5 more problems\)$/);
  });

  it('refuses a text over 1 MiB before parsing it, counting UTF-8 bytes', () => {
    expect(MAX_RULE_TEXT_BYTES).toBe(1024 * 1024);
    const padding = `# ${'x'.repeat(MAX_RULE_TEXT_BYTES)}\ngroups: []\n`;
    expect(refusal(() => parseRuleFile(padding, PROMQL)).message).toBe('rule file too large: more than 1048576 bytes (1 MiB)');
    expect(refusal(() => parseRuleGroup(`# ${'x'.repeat(MAX_RULE_TEXT_BYTES)}\nname: a\n`, PROMQL)).message).toBe('rule group too large: more than 1048576 bytes (1 MiB)');
    // 400 000 characters, 1.2 MB: over the cap in bytes though not in characters.
    expect(refusal(() => parseRuleFile(`# ${'€'.repeat(400_000)}\ngroups: []\n`, PROMQL)).message).toMatch(/^rule file too large/);
    expect(parseRuleFile(`# ${'€'.repeat(300_000)}\ngroups: []\n`, PROMQL)).toEqual([]);
  });

  it(`refuses more than ${MAX_RULES_PER_GROUP} rules in a group`, () => {
    const rules = (n: number) => `name: big\nrules:\n${'  - record: r\n    expr: up\n'.repeat(n)}`;
    expect(parseRuleGroup(rules(MAX_RULES_PER_GROUP), PROMQL).rules).toHaveLength(MAX_RULES_PER_GROUP);
    expect(refusal(() => parseRuleGroup(rules(MAX_RULES_PER_GROUP + 1), PROMQL)).message).toBe('group "big": too many rules: 1001 (at most 1000 in one group)');
  });

  it('refuses aliases that expand past the value budget (a YAML "billion laughs")', () => {
    // Each rule's labels merge the previous rule's ten times: rule i expands to 10^i values.
    let text = 'name: g\nrules:\n  - alert: A0\n    expr: up\n    labels: &l0 {a: b}\n';
    for (let i = 1; i <= 7; i++) text += `  - alert: A${i}\n    expr: up\n    labels: &l${i} {<<: [${Array(10).fill(`*l${i - 1}`).join(', ')}]}\n`;
    const started = Date.now();
    expect(refusal(() => parseRuleGroup(text, PROMQL)).message).toBe('rule file has more than 500000 YAML values once its aliases are expanded');
    expect(Date.now() - started).toBeLessThan(5000);
  });
});

describe('rule YAML nested past the stack', () => {
  it('is a rules error naming the nesting, not the engine\'s stack', () => {
    const deep = `name: g\nrules: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`;
    for (const got of [refusal(() => parseRuleGroup(deep, PROMQL)), refusal(() => parseRuleFile(`groups: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`, PROMQL))]) {
      expect(got.message).toMatch(/^yaml: (line \d+, col \d+: )?the document nests too deeply/);
      expect(got.message).not.toMatch(/call stack/i);
    }
  });
});

describe('parseRuleGroup (the ruler API body)', () => {
  it('parses one group and refuses a whole file in its place', () => {
    const g = parseRuleGroup('name: api\ninterval: 1m\nrules:\n  - alert: Down\n    expr: up == 0\n    for: 5m\n', PROMQL);
    expect(g).toEqual({
      name: 'api',
      intervalMs: 60_000,
      intervalText: '1m',
      labels: {},
      rules: [{ kind: 'alerting', alert: 'Down', expr: 'up == 0', forMs: 300_000, forText: '5m', keepFiringForMs: 0, labels: {}, annotations: {} }],
    });
    expect(refusal(() => parseRuleGroup('groups:\n  - name: a\n    rules: []\n', PROMQL)).message).toBe('yaml: line 1: field groups not found in type rulefmt.RuleGroup');
  });

  it('takes a JSON body (JSON is YAML), as the API gets from a JSON client', () => {
    const body = JSON.stringify({ name: 'j', interval: '30s', rules: [{ alert: 'A', expr: 'up == 0', labels: { severity: 'page' } }] });
    expect(parseRuleGroup(body, PROMQL)).toEqual(parseRuleGroup('name: j\ninterval: 30s\nrules:\n  - alert: A\n    expr: up == 0\n    labels: {severity: page}\n', PROMQL));
  });

  it('refuses an empty body and a nameless group', () => {
    expect(refusal(() => parseRuleGroup('', PROMQL)).message).toBe('empty rule group: expected a YAML mapping with name and rules');
    expect(refusal(() => parseRuleGroup('# nothing\n', PROMQL)).message).toBe('empty rule group: expected a YAML mapping with name and rules');
    expect(refusal(() => parseRuleGroup('rules: []\n', PROMQL)).message).toBe('group 1: Groupname must not be empty');
  });

  it('checks Loki groups as metric queries', () => {
    const g = parseRuleGroup('name: l\nrules:\n  - record: r\n    expr: sum(count_over_time({app="x"}[1m]))\n', LOGQL);
    expect(g.rules[0]).toMatchObject({ kind: 'recording', expr: 'sum(count_over_time({app="x"}[1m]))' });
    expect(refusal(() => parseRuleGroup('name: l\nrules:\n  - record: r\n    expr: \'{app="x"}\'\n', LOGQL)).message).toMatch(/^group "l", rule 1, "r": could not parse expression: only sample expression supported/);
    // A PromQL expression that is not LogQL is refused in a Loki group.
    expect(refusal(() => parseRuleGroup('name: l\nrules:\n  - record: r\n    expr: up\n', LOGQL)).message).toMatch(/^group "l", rule 1, "r": could not parse expression: parse error at line 1/);
  });
});

describe('templates', () => {
  const text = `name: t
rules:
  - alert: A
    expr: up
    labels: {severity: "{{ if }}", team: ok}
    annotations: {summary: "{{ $labels.job }}"}
  - record: r
    expr: up
    labels: {x: "{{ not checked }}"}
`;

  it("passes an alerting rule's label and annotation values to checkTemplate, naming each", () => {
    const seen: [string, string][] = [];
    parseRuleGroup(text, { language: 'promql', checkTemplate: (t, where) => void seen.push([t, where]) });
    expect(seen).toEqual([
      ['{{ if }}', 'label "severity"'],
      ['ok', 'label "team"'],
      ['{{ $labels.job }}', 'annotation "summary"'],
    ]);
  });

  it('reports what checkTemplate throws after the group, rule and field', () => {
    const checkTemplate = (t: string) => {
      if (t.includes('if }}')) throw new Error('template: __alert_A:1: missing value for if');
    };
    expect(refusal(() => parseRuleGroup(text, { language: 'promql', checkTemplate })).message).toBe('group "t", rule 1, "A": label "severity": template: __alert_A:1: missing value for if');
  });
});

describe('ruleGroupToYaml', () => {
  it('writes rulefmt field order, durations as written, sorted labels and multi-line exprs as blocks', () => {
    const [api, quiet] = parseRuleFile(VALID[0]!.text, PROMQL);
    expect(ruleGroupToYaml(api!)).toBe(`name: api
interval: 90s
limit: 10
rules:
  - record: job:http_requests:rate5m
    expr: sum by (job) (rate(http_requests_total[5m]))
    labels:
      team: platform
      version: "1.10"
  - alert: HighLatency
    expr: |
      histogram_quantile(0.99,
        sum by (le, job) (rate(http_request_duration_seconds_bucket[5m]))
      ) > 0.5
    for: 10m
    keep_firing_for: 5m
    labels:
      empty: ""
      severity: page
    annotations:
      description: p99 is {{ $value | humanizeDuration }}
      summary: High latency on {{ $labels.job }}
  - alert: AlwaysFiring
    expr: vector(1)
`);
    expect(ruleGroupToYaml(quiet!)).toBe(`name: quiet
interval: "0"
rules:
  - record: instance:up:count
    expr: count by (instance) (up)
`);
  });

  it('writes a duration changed since parsing in Prometheus form, not the stale text', () => {
    const g = parseRuleGroup('name: a\ninterval: 1m\nrules:\n  - alert: A\n    expr: up\n    for: 10m\n', PROMQL);
    const rule = g.rules[0]!;
    if (rule.kind !== 'alerting') throw new Error('expected an alerting rule');
    rule.forMs = 90_000;
    g.intervalMs = 5_400_000;
    expect(ruleGroupToYaml(g)).toBe('name: a\ninterval: 1h30m\nrules:\n  - alert: A\n    expr: up\n    for: 1m30s\n');
  });

  it('writes a group built without written durations (and no optional fields)', () => {
    const g: RuleGroup = {
      name: 'built',
      queryOffsetMs: 0,
      labels: { env: 'prod' },
      rules: [{ kind: 'alerting', alert: 'A', expr: 'up == 0', forMs: 300_000, keepFiringForMs: 0, labels: {}, annotations: {} }],
    };
    expect(ruleGroupToYaml(g)).toBe('name: built\nquery_offset: 0s\nlabels:\n  env: prod\nrules:\n  - alert: A\n    expr: up == 0\n    for: 5m\n');
    const back = parseRuleGroup(ruleGroupToYaml(g), PROMQL);
    expect(back).toEqual({ ...g, queryOffsetText: '0s', rules: [{ ...g.rules[0], forText: '5m' }] });
  });

  it('round-trips strings YAML could misread', () => {
    const awkward = ['  leading spaces', 'trailing space ', 'a: b', '# not a comment', "it's \"quoted\"", 'true', '1e3', '~', '- dash', 'multi\nline\n', 'multi\n  indented\n\n', '\ttab', 'ünïcödé ✓', '{{ $value }}', '@at', '*star', '&amp', '!bang', '%pct', '', 'x\r\ny'];
    const g: RuleGroup = {
      name: 'awkward: name',
      labels: {},
      rules: awkward.map((s, i) => ({ kind: 'alerting', alert: `A${i}`, expr: `up # ${JSON.stringify(s)}`, forMs: 0, keepFiringForMs: 0, labels: { v: s }, annotations: { s } })),
    };
    expect(parseRuleGroup(ruleGroupToYaml(g), PROMQL)).toEqual(g);
  });
});

describe('ruleNamespacesToYaml', () => {
  const group = (name: string, record: string): RuleGroup => ({ name, labels: {}, rules: [{ kind: 'recording', record, expr: 'up', labels: {} }] });

  it("writes the Cortex GET /config/v1/rules body: namespaces sorted, each one's groups in order", () => {
    const body = ruleNamespacesToYaml({ team_b: [group('g2', 'b'), group('g1', 'a')], '9': [group('x', 'x')], '10': [group('y', 'y')] });
    expect(body).toBe(`"10":
  - name: y
    rules:
      - record: y
        expr: up
"9":
  - name: x
    rules:
      - record: x
        expr: up
team_b:
  - name: g2
    rules:
      - record: b
        expr: up
  - name: g1
    rules:
      - record: a
        expr: up
`);
    expect(ruleNamespacesToYaml(new Map([['team_b', [group('g2', 'b'), group('g1', 'a')]], ['9', [group('x', 'x')]], ['10', [group('y', 'y')]]]))).toBe(body);
  });

  it('gives each namespace a value that parses as a rule file', () => {
    const body = ruleNamespacesToYaml({ ns: [group('g1', 'a')] });
    expect(parseRuleFile(body.replace(/^ns:/, 'groups:'), PROMQL)).toEqual([group('g1', 'a')]);
    expect(ruleNamespacesToYaml({})).toBe('{}\n');
  });
});

describe('JSON storage form', () => {
  it('round-trips, as a value and as text, with keys in one order whatever the input order', () => {
    const [api] = parseRuleFile(VALID[0]!.text, PROMQL);
    const json = ruleGroupToJson(api!);
    expect(json.v).toBe(1);
    expect(ruleGroupFromJson(json)).toEqual(api);
    expect(ruleGroupFromJson(JSON.stringify(json))).toEqual(api);
  });

  it('refuses a malformed stored group as internal', () => {
    const good = ruleGroupToJson(parseRuleGroup('name: a\nrules:\n  - alert: A\n    expr: up\n', PROMQL));
    const cases: [unknown, string][] = [
      ['{', 'stored rule group is malformed: not JSON'],
      [[], 'stored rule group is malformed: not an object'],
      [{ ...good, v: 2 }, 'stored rule group is malformed: unknown version 2 (this Floe reads 1)'],
      [{ ...good, name: 7 }, 'stored rule group is malformed: no name or no rules'],
      [{ ...good, rules: {} }, 'stored rule group is malformed: no name or no rules'],
    ];
    for (const [stored, message] of cases) {
      const err = refusal(() => ruleGroupFromJson(stored));
      expect(err.kind).toBe('internal');
      expect(err.message.startsWith(message)).toBe(true);
    }
  });
});
