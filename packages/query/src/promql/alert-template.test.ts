import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { expandAlertTemplate, parseAlertTemplate, MAX_TEMPLATE_QUERIES, type AlertTemplateData, type TemplateSample } from './alert-template.ts';
import { formatFloat, sprintf } from './alert-template-values.ts';
import { humanize, humanize1024, humanizeDuration, humanizePercentage, humanizeTimestamp, title } from './alert-template-funcs.ts';

const data: AlertTemplateData = {
  labels: { instance: 'web-1.example.com:9100', job: 'node', 'key-with-dash': 'dashed', severity: 'critical' },
  externalLabels: { cluster: 'eu-1' },
  value: 0.25,
  externalURL: 'http://prom.example.com/',
};

const x = (text: string, over: Partial<AlertTemplateData> = {}) => expandAlertTemplate(text, { ...data, ...over });

const parseError = (text: string): FloeError => {
  try {
    parseAlertTemplate(text);
  } catch (e) {
    return e as FloeError;
  }
  throw new Error(`parsed: ${text}`);
};

/** The message inside `<error expanding template: …>`, or a failure when the template expanded. */
const execError = (text: string, over: Partial<AlertTemplateData> = {}): string => {
  const out = x(text, over);
  const m = /^<error expanding template: (.*)>$/s.exec(out);
  if (!m) throw new Error(`expanded to ${JSON.stringify(out)}`);
  return m[1]!;
};

describe('text, actions and data', () => {
  it('prints text and the predefined variables', () => {
    expect(x('plain text')).toBe('plain text');
    expect(x('')).toBe('');
    expect(x('High latency on {{ $labels.instance }}: {{ $value }}')).toBe('High latency on web-1.example.com:9100: 0.25');
    expect(x('{{ $externalLabels.cluster }} {{ $externalURL }}')).toBe('eu-1 http://prom.example.com/');
  });

  it('reads the dot as Prometheus’s data struct', () => {
    expect(x('{{ .Labels.job }}|{{ .ExternalLabels.cluster }}|{{ .Value }}|{{ .ExternalURL }}')).toBe('node|eu-1|0.25|http://prom.example.com/');
    expect(x('{{ $.Labels.job }}')).toBe('node');
    expect(x('{{ . }}', { labels: { a: 'b' }, externalLabels: {} })).toBe('{map[a:b] map[] http://prom.example.com/ 0.25}');
    expect(x('{{ $labels }}', { labels: { b: '2', a: '1' } })).toBe('map[a:1 b:2]');
  });

  it('prints a missing label as empty and indexes awkward names', () => {
    expect(x('[{{ $labels.nope }}]')).toBe('[]');
    expect(x('{{ index $labels "key-with-dash" }}')).toBe('dashed');
    expect(x('[{{ index $labels "missing" }}]')).toBe('[]');
    expect(x('{{ index .Labels "job" }}')).toBe('node');
  });

  it('reads literals', () => {
    expect(x('{{ "a\\tb\\n\\u00e9\\x41" }}')).toBe('a\tb\né\x41');
    expect(x('{{ `raw \\n` }}')).toBe('raw \\n');
    expect(x('{{ 42 }} {{ -7 }} {{ 0x1F }} {{ 017 }} {{ 1_000 }}')).toBe('42 -7 31 15 1000');
    expect(x('{{ 1.5 }} {{ 1.0 }} {{ 1e3 }} {{ .5 }}')).toBe('1.5 1 1000 0.5');
    expect(x("{{ true }} {{ false }} {{ 'a' }}")).toBe('true false 97');
  });

  it('needs no spaces inside the delimiters', () => {
    expect(x('{{.Labels.job}}/{{$labels.severity}}/{{$value|humanize}}')).toBe('node/critical/250m');
  });

  it('trims whitespace beside trim markers, across newlines', () => {
    expect(x('a  \n {{- $labels.job -}} \n\t b')).toBe('anodeb');
    expect(x('a {{- 1 }} b')).toBe('a1 b');
    expect(x('a {{ 1 -}} b')).toBe('a 1b');
    expect(x('{{-3}}')).toBe('-3'); // a number, not a trim marker
    expect(x('a\n  {{- /* note */ -}}\n  b')).toBe('ab');
  });

  it('keeps delimiters inside string literals', () => {
    expect(x('{{ "}}" }}{{ `{{` }}')).toBe('}}{{');
  });

  it('prints a nil result as <no value>, as Go does', () => {
    expect(x('{{ and nil 1 }}')).toBe('<no value>');
  });

  it('skips comments', () => {
    expect(x('a{{/* a comment {{ with braces }} */}}b')).toBe('ab');
    expect(x('a{{/* multi\nline */}}b')).toBe('ab');
  });
});

describe('pipelines and variables', () => {
  it('passes the piped value as the last argument', () => {
    expect(x('{{ $value | humanizePercentage }}')).toBe('25%');
    expect(x('{{ $value | printf "%.1f" }}')).toBe('0.2'); // 0.25 is exact: half to even
    expect(x('{{ "a" | printf "%s-%s" "b" }}')).toBe('b-a');
    expect(x('{{ $labels.job | toUpper | printf "<%s>" }}')).toBe('<NODE>');
  });

  it('evaluates parenthesised pipelines and chains fields off them', () => {
    expect(x('{{ printf "%s/%s" (toUpper $labels.job) ($labels.severity | title) }}')).toBe('NODE/Critical');
    expect(x('{{ (.Labels).job }}')).toBe('node');
  });

  it('declares and assigns variables, scoped to their block', () => {
    expect(x('{{ $x := "one" }}{{ $x }}{{ $x = "two" }}{{ $x }}')).toBe('onetwo');
    expect(x('{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ $y := 3 }}{{ end }}{{ $x }}')).toBe('2');
    expect(parseError('{{ if true }}{{ $y := 3 }}{{ end }}{{ $y }}').message).toBe('template: 1:39: undefined variable "$y"');
    expect(x('{{ $labels := "shadowed" }}{{ $labels }}')).toBe('shadowed');
  });
});

describe('control structures', () => {
  it('if / else if / else', () => {
    const t = '{{ if eq $labels.severity "page" }}P{{ else if eq $labels.severity "critical" }}C{{ else }}O{{ end }}';
    expect(x(t)).toBe('C');
    expect(x(t, { labels: { severity: 'page' } })).toBe('P');
    expect(x(t, { labels: {} })).toBe('O');
    expect(x('{{ if $labels.nope }}yes{{ end }}')).toBe('');
  });

  it('uses Go truthiness', () => {
    const truth = (expr: string) => x(`{{ if ${expr} }}T{{ else }}F{{ end }}`);
    expect(['""', '0', '0.0', 'false', '$labels.nope', '(index $labels "nope")', '(and 0 1)'].map(truth).join('')).toBe('FFFFFFF');
    expect(['"x"', '1', '-0.5', 'true', '$labels', '.'].map(truth).join('')).toBe('TTTTTT');
    expect(x('{{ if .Labels }}T{{ else }}F{{ end }}', { labels: {} })).toBe('F');
    expect(x('{{ if $value }}T{{ else }}F{{ end }}', { value: NaN })).toBe('T');
  });

  it('with sets the dot, and has else and else with', () => {
    expect(x('{{ with $labels.job }}job={{ . }}{{ else }}none{{ end }}')).toBe('job=node');
    expect(x('{{ with $labels.nope }}x{{ else with $labels.job }}[{{ . }}]{{ end }}')).toBe('[node]');
    expect(x('{{ with $labels.nope }}x{{ else }}none{{ end }}')).toBe('none');
  });

  it('ranges over maps in key order, with key and value variables', () => {
    const labels = { b: '2', a: '1', c: '3' };
    expect(x('{{ range $k, $v := $labels }}{{ $k }}={{ $v }};{{ end }}', { labels })).toBe('a=1;b=2;c=3;');
    expect(x('{{ range $labels }}{{ . }}{{ end }}', { labels })).toBe('123');
    expect(x('{{ range $v := $labels }}{{ $v }}{{ end }}', { labels })).toBe('123');
    expect(x('{{ range $labels }}x{{ else }}empty{{ end }}', { labels: {} })).toBe('empty');
  });

  it('ranges over integers and honours break and continue', () => {
    expect(x('{{ range $i := 5 }}{{ $i }}{{ end }}')).toBe('01234');
    expect(x('{{ range $i := 10 }}{{ if eq $i 2 }}{{ continue }}{{ end }}{{ if eq $i 4 }}{{ break }}{{ end }}{{ $i }}{{ end }}')).toBe('013');
    expect(x('{{ range $k, $v := $labels }}{{ if eq $k "b" }}{{ break }}{{ end }}{{ $v }}{{ end }}', { labels: { a: '1', b: '2', c: '3' } })).toBe('1');
  });

  it('keeps $ as the top-level data inside range and with', () => {
    expect(x('{{ range $labels }}{{ $.Labels.job }}{{ end }}', { labels: { job: 'j', a: 'b' } })).toBe('jj');
    expect(x('{{ with $labels.job }}{{ . }}@{{ $.ExternalLabels.cluster }}{{ end }}')).toBe('node@eu-1');
  });

  it('assigns to an outer variable from inside a range', () => {
    expect(x('{{ $n := 0 }}{{ range $labels }}{{ $n = len . }}{{ end }}{{ $n }}', { labels: { a: 'x', b: 'yyy' } })).toBe('3');
  });
});

describe('builtins', () => {
  it('and / or return the deciding value and short-circuit', () => {
    expect(x('{{ and 1 "" 2 }}|{{ and 1 2 }}|{{ or "" 0 "z" }}|{{ or "" 0 }}')).toBe('|2|z|0');
    // The failing call is never reached.
    expect(x('{{ or $labels.job (index 5 1) }}')).toBe('node');
    expect(x('{{ and $labels.nope (index 5 1) }}')).toBe('');
    expect(x('{{ not true }} {{ not "" }}')).toBe('false true');
  });

  it('compares', () => {
    expect(x('{{ eq 1 1 }} {{ eq "a" "b" "a" }} {{ ne "a" "b" }} {{ eq true false }}')).toBe('true true true false');
    expect(x('{{ lt 1 2 }} {{ le 2 2 }} {{ gt 3 2 }} {{ ge 1 2 }}')).toBe('true true true false');
    expect(x('{{ lt "abc" "abd" }} {{ gt "b" "a" }}')).toBe('true true');
    expect(x('{{ gt $value 0.2 }} {{ gt $value 1 }} {{ eq (len $labels) 4 }}')).toBe('true false true');
    // Go would call `eq $value 5` an int/float mismatch; here an int literal and a float compare as numbers.
    expect(x('{{ eq $value 5 }} {{ ge $value 5 }} {{ lt $value 6 }}', { value: 5 })).toBe('true true true');
    expect(x('{{ eq $labels.nope "" }} {{ ne $labels.job "node" }}')).toBe('true false');
  });

  it('len, index, slice', () => {
    expect(x('{{ len $labels }} {{ len "héllo" }} {{ len $labels.nope }}')).toBe('4 6 0');
    expect(x('{{ index "abc" 1 }} {{ slice "abcdef" 1 3 }} {{ slice "abc" 1 }}')).toBe('98 bc bc');
  });

  it('print, printf, println', () => {
    expect(x('{{ print "a" 1 2 "b" }}')).toBe('a1 2b');
    expect(x('{{ println "a" 1 }}')).toBe('a 1\n');
    expect(x('{{ printf "%d items, %5.2f%%, %s" 3 12.345 "ok" }}')).toBe('3 items, 12.35%, ok');
  });

  it('html, js, urlquery', () => {
    expect(x(`{{ html "<a href='x'>&\\"" }}`)).toBe('&lt;a href=&#39;x&#39;&gt;&amp;&#34;');
    expect(x(`{{ js "it's <b>\\"x\\"</b>\\n" }}`)).toBe("it\\'s \\u003Cb\\u003E\\\"x\\\"\\u003C/b\\u003E\\u000A");
    expect(x('{{ urlquery "a b&c=d/é" }}')).toBe('a+b%26c%3Dd%2F%C3%A9');
    expect(x('{{ $labels.job | urlquery }}')).toBe('node');
  });
});

describe('Prometheus functions', () => {
  it('humanize', () => {
    const cases: [number, string][] = [
      [0, '0'], [1, '1'], [1000, '1k'], [1234567, '1.235M'], [999.9, '999.9'], [1e27, '1000Y'], [1e28, '1e+04Y'], [-2500, '-2.5k'],
      [0.0012, '1.2m'], [0.5, '500m'], [1.5e-7, '150n'], [NaN, 'NaN'], [Infinity, '+Inf'], [-Infinity, '-Inf'],
    ];
    for (const [v, want] of cases) expect(humanize(v), String(v)).toBe(want);
    expect(x('{{ humanize "2048" }} {{ 1234 | humanize }}')).toBe('2.048k 1.234k');
  });

  it('humanize1024', () => {
    const cases: [number, string][] = [[0, '0'], [1, '1'], [2048, '2ki'], [1536, '1.5ki'], [1073741824, '1Gi'], [0.5, '0.5'], [-4096, '-4ki']];
    for (const [v, want] of cases) expect(humanize1024(v), String(v)).toBe(want);
  });

  it('humanizeDuration', () => {
    const cases: [number, string][] = [
      [0, '0s'], [0.5, '500ms'], [0.0012, '1.2ms'], [1.5e-6, '1.5us'], [1, '1s'], [1.5, '1.5s'], [59.99, '59.99s'],
      [90, '1m 30s'], [90.7, '1m 30s'], [3723, '1h 2m 3s'], [3600, '1h 0m 0s'], [86400, '1d 0h 0m 0s'], [93784, '1d 2h 3m 4s'],
      [-90, '-1m 30s'], [NaN, 'NaN'], [Infinity, '+Inf'],
    ];
    for (const [v, want] of cases) expect(humanizeDuration(v), String(v)).toBe(want);
    expect(x('{{ $value | humanizeDuration }}', { value: 3723 })).toBe('1h 2m 3s');
  });

  it('humanizePercentage and humanizeTimestamp', () => {
    expect(humanizePercentage(0.1234)).toBe('12.34%');
    expect(humanizePercentage(1)).toBe('100%');
    expect(humanizePercentage(0.123456)).toBe('12.35%');
    expect(humanizeTimestamp(1704164645)).toBe('2024-01-02 03:04:05 +0000 UTC');
    expect(humanizeTimestamp(1704164645.5)).toBe('2024-01-02 03:04:05.5 +0000 UTC');
    // As in Prometheus: seconds × 1e9 is rounded to a float64 before truncating to milliseconds.
    expect(humanizeTimestamp(1704164645.25)).toBe('2024-01-02 03:04:05.249 +0000 UTC');
    expect(humanizeTimestamp(0)).toBe('1970-01-01 00:00:00 +0000 UTC');
    expect(humanizeTimestamp(NaN)).toBe('NaN');
    expect(x('{{ toTime 1704164645 }}')).toBe('2024-01-02 03:04:05 +0000 UTC');
  });

  it('title, toUpper, toLower, safeHtml', () => {
    expect(title('hello world-wide web_server')).toBe('Hello World-Wide Web_server');
    expect(title("don't stop.now")).toBe("Don't Stop.now");
    expect(x('{{ title "disk full" }} {{ toUpper "abc" }} {{ toLower "ÀB" }} {{ safeHtml "<b>" }}')).toBe('Disk Full ABC àb <b>');
  });

  it('reReplaceAll and match, with RE2 syntax and $1 references', () => {
    expect(x('{{ reReplaceAll "(.*):.*" "$1" $labels.instance }}')).toBe('web-1.example.com');
    expect(x('{{ reReplaceAll "[aeiou]" "_" "education" }}')).toBe('_d_c_t__n');
    expect(x('{{ reReplaceAll "(?P<host>[^.]+)\\\\..*" "${host}!" "a.b.c" }}')).toBe('a!');
    expect(x('{{ reReplaceAll "a" "$$" "banana" }}')).toBe('b$n$n$');
    expect(x('{{ reReplaceAll "(a)" "$1x" "a" }}')).toBe(''); // Go reads $1x as a group named "1x"
    expect(x('{{ reReplaceAll "a*" "-" "baaac" }}')).toBe('-b-c-'); // no empty match right after a match
    expect(x('{{ match "^web-\\\\d+" $labels.instance }} {{ match "(?i)NODE" $labels.job }} {{ match "^x" "y" }}')).toBe('true true false');
  });

  it('stripPort, stripDomain, parseDuration', () => {
    expect(x('{{ stripPort "host:9100" }} {{ stripPort "[::1]:80" }} {{ stripPort "host" }} {{ stripPort "::1" }}')).toBe('host ::1 host ::1');
    expect(x('{{ stripDomain "web-1.example.com:9100" }} {{ stripDomain "web-1.example.com" }} {{ stripDomain "10.0.0.1:80" }} {{ stripDomain "[::1]:80" }}')).toBe(
      'web-1:9100 web-1 10.0.0.1:80 [::1]:80',
    );
    expect(x('{{ parseDuration "1h30m" }} {{ parseDuration "250ms" }} {{ parseDuration "0" }}')).toBe('5400 0.25 0');
  });

  it('converts string arguments to numbers, as Prometheus does', () => {
    expect(x('{{ humanize "1e6" }} {{ humanizeDuration "90" }} {{ humanize "NaN" }}')).toBe('1M 1m 30s NaN');
    expect(execError('{{ humanize "abc" }}')).toBe('template: 1:4: executing at <humanize "abc">: error calling humanize: strconv.ParseFloat: parsing "abc": invalid syntax');
    expect(execError('{{ humanize $labels }}')).toContain("can't convert map[string]string to float");
  });
});

describe('number printing (Go %v of float64)', () => {
  it('matches strconv’s shortest g format', () => {
    const cases: [number, string][] = [
      [1, '1'], [0.5, '0.5'], [150, '150'], [100000, '100000'], [1000000, '1e+06'], [123456, '123456'], [1234567, '1.234567e+06'],
      [123456789, '1.23456789e+08'], [1e21, '1e+21'], [0.0001, '0.0001'], [0.00001, '1e-05'], [0.1 + 0.2, '0.30000000000000004'],
      [-2.5, '-2.5'], [0, '0'], [-0, '-0'], [1e100, '1e+100'], [5e-324, '5e-324'], [NaN, 'NaN'], [Infinity, '+Inf'], [-Infinity, '-Inf'],
    ];
    for (const [v, want] of cases) expect(x('{{ $value }}', { value: v }), String(v)).toBe(want);
  });

  it('formats fixed precisions with half-to-even rounding on exact ties', () => {
    expect(formatFloat(2.5, 'f', 0)).toBe('2');
    expect(formatFloat(3.5, 'f', 0)).toBe('4');
    expect(formatFloat(0.125, 'f', 2)).toBe('0.12');
    expect(formatFloat(1.005, 'f', 2)).toBe('1.00'); // 1.005 is just below the tie in binary
    expect(formatFloat(1234.5678, 'e', 3)).toBe('1.235e+03');
    expect(formatFloat(1000, 'g', 4)).toBe('1000');
    expect(formatFloat(12345, 'g', 4)).toBe('1.234e+04'); // exact tie 1234.5 → even
    expect(formatFloat(0.000012345, 'g', 3)).toBe('1.23e-05');
    expect(formatFloat(99.99, 'f', 1)).toBe('100.0');
  });
});

describe('printf', () => {
  it('supports the common verbs and flags', () => {
    expect(sprintf('%s|%q|%v|%x|%X', ['hi', 'a"b', 'v', 'hi', 'hi'])).toBe('hi|"a\\"b"|v|6869|6869');
    expect(sprintf('%d|%5d|%-5d|%05d|%+d|%x|%o|%b|%c', [42n, 42n, 42n, -42n, 42n, 255n, 8n, 5n, 65n])).toBe('42|   42|42   |-0042|+42|ff|10|101|A');
    expect(sprintf('%f|%.2f|%8.3f|%-8.1f|%08.2f|%+.1f|%e|%.2e|%g|%.3g|%v', [1.5, 3.14159, 2.5, 2.5, -3.14159, 2.0, 1234.5678, 1234.5678, 1e21, 3.14159, 0.1])).toBe(
      '1.500000|3.14|   2.500|2.5     |-0003.14|+2.0|1.234568e+03|1.23e+03|1e+21|3.14|0.1',
    );
    expect(sprintf('%t|%v|%%|%5s|%-5s|%.2s', [true, false, 'ab', 'ab', 'abc'])).toBe('true|false|%|   ab|ab   |ab');
    expect(sprintf('%6.2f|%06.1f|% f|%+v|% .1f', [Infinity, NaN, Infinity, NaN, 2.0])).toBe('  +Inf|   NaN| Inf|+NaN| 2.0');
    expect(sprintf('%*d|%.*f', [4n, 7n, 2n, 1.0])).toBe('   7|1.00');
  });

  it('reports mismatches in-band as Go does', () => {
    expect(sprintf('%d', [1.5])).toBe('%!d(float64=1.5)');
    expect(sprintf('%d %d', [1n])).toBe('1 %!d(MISSING)');
    expect(sprintf('%d', [1n, 'x', 2.5])).toBe('1%!(EXTRA string=x, float64=2.5)');
    expect(sprintf('%s', [3n])).toBe('%!s(int=3)');
    expect(sprintf('%z', ['a'])).toBe('%!z(string=a)');
    expect(sprintf('abc%', [])).toBe('abc%!(NOVERB)');
    expect(x('{{ printf "%d" $value }}', { value: 5 })).toBe('%!d(float64=5)');
    expect(x('{{ printf "%s and %s" "one" }}')).toBe('one and %!s(MISSING)');
  });
});

describe('parse errors', () => {
  it('throws a bad_data FloeError naming the problem and its position', () => {
    const e = parseError('{{ $labels.job }');
    expect(e).toBeInstanceOf(FloeError);
    expect(e.kind).toBe('bad_data');
    expect(e.code).toBe('FLOE_ERR_ALERT_TEMPLATE');
    expect(e.message).toBe('template: 1:16: unexpected "}" in operand');
  });

  it('names each problem as Go does', () => {
    const cases: [string, string][] = [
      ['{{ foo }}', 'template: 1:4: function "foo" not defined'],
      ['{{ $nope }}', 'template: 1:4: undefined variable "$nope"'],
      ['{{ if true }}x', 'template: 1:15: unexpected EOF'],
      ['{{ end }}', 'template: 1:4: unexpected {{end}}'],
      ['{{ else }}', 'template: 1:4: unexpected {{else}}'],
      ['{{ if 1 }}{{ else }}{{ else }}{{ end }}', 'template: 1:24: expected end; found {{else}}'],
      ['{{ range $labels }}{{ else if 1 }}{{ end }}', 'template: 1:28: unexpected <if> in else'],
      ['{{ "abc }}', 'template: 1:4: unterminated quoted string'],
      ['{{ 1', 'template: 1:5: unclosed action'],
      ['{{/* x', 'template: 1:1: unclosed comment'],
      ['{{ if }}{{ end }}', 'template: 1:7: missing value for if'],
      ['{{ break }}', 'template: 1:4: {{break}} outside {{range}}'],
      ['{{ (1 }}', 'template: 1:4: unclosed left paren'],
      ['{{ 1) }}', 'template: 1:5: unexpected right paren'],
      ['{{ 3x }}', 'template: 1:4: bad number syntax: "3x"'],
      ['{{ "a" | "b" }}', 'template: 1:10: non executable command in pipeline stage 2'],
      ['{{ $x = 1 }}', 'template: 1:4: undefined variable "$x"'],
      ['{{ template "x" }}', 'template: 1:4: {{template}} is not supported in alert templates'],
      ['{{ }}', 'template: 1:4: missing value for command'],
      ['line one\n{{ 1 + }}', 'template: 2:6: bad number syntax: "+"'],
      ['{{ "a".b }}', 'template: 1:7: unexpected . after term "\\"a\\""'],
    ];
    for (const [text, want] of cases) expect(parseError(text).message, text).toBe(want);
  });

  it('refuses the console-template functions, which alert templates cannot use', () => {
    for (const f of ['args', 'tmpl']) {
      expect(parseError(`{{ ${f} "x" }}`).message).toBe(`template: 1:4: function "${f}" serves console templates and is not available in alert templates`);
    }
  });

  it('reports parse errors in-band from expandAlertTemplate', () => {
    expect(x('{{ foo }}')).toBe('<error expanding template: template: 1:4: function "foo" not defined>');
  });
});

describe('execution errors', () => {
  it('are reported in the text, never thrown', () => {
    expect(execError('{{ index $labels 5 }}')).toBe('template: 1:4: executing at <index $labels 5>: error calling index: value has type int; should be string');
    expect(execError('{{ if gt $labels.job 5 }}x{{ end }}')).toBe('template: 1:7: executing at <gt $labels.job 5>: error calling gt: incompatible types for comparison');
    expect(execError('{{ eq "a" 1 }}')).toContain('incompatible types for comparison');
    expect(execError('{{ lt true false }}')).toContain('invalid type for comparison');
    expect(execError('{{ .Nope }}')).toBe("template: 1:4: executing at <.Nope>: can't evaluate field Nope in type struct");
    expect(execError('{{ $value.x }}')).toContain("can't evaluate field x in type float64");
    expect(execError('{{ $labels.job.x }}')).toContain("can't evaluate field x in type string");
    expect(execError('{{ match "[" "x" }}')).toMatch(/error calling match: error parsing regexp: /);
    expect(execError('{{ toUpper $value }}')).toContain('wrong type for value; expected string; got float64');
    expect(execError('{{ humanize 1 2 }}')).toContain('wrong number of args for humanize: want 1 got 2');
    expect(execError('{{ range $value }}{{ end }}')).toContain("range can't iterate over 0.25");
    expect(execError('{{ len 3 }}')).toContain('len of type int');
    expect(execError('{{ index "abc" 10 }}')).toContain('index out of range: 10');
    expect(execError('{{ 1 2 }}')).toContain("can't give argument to non-function 1");
    expect(execError('{{ nil }}')).toContain('nil is not a command');
    expect(execError('{{ if nil }}{{ end }}')).toContain('nil is not a command');
    expect(execError('{{ parseDuration "soon" }}')).toContain('not a valid duration string: "soon"');
    expect(execError('{{ reReplaceAll "(" "" "x" }}')).toContain('error calling reReplaceAll: regexp: Compile("("): error parsing regexp: ');
    expect(execError('{{ humanizeTimestamp 1e300 }}')).toContain('cannot be represented as a nanoseconds timestamp');
  });

  it('reports the line and column of the failing command', () => {
    expect(execError('ok\n  {{ humanize "x" }}')).toMatch(/^template: 2:6: executing at <humanize "x">/);
  });

  it('keeps a parsed template reusable across alerts', () => {
    const t = parseAlertTemplate('{{ $labels.instance | stripPort }} is {{ humanize $value }}');
    expect(t.expand({ ...data, value: 1500 })).toBe('web-1.example.com is 1.5k');
    expect(t.expand({ ...data, labels: { instance: 'db:5432' }, value: 0.002 })).toBe('db is 2m');
  });
});

describe('hostile templates are bounded', () => {
  it('caps output', () => {
    const out = x('{{ range $i := 10000 }}{{ printf "%100s" "x" }}{{ end }}');
    expect(out).toMatch(/^<error expanding template: .*output exceeds 65536 bytes>$/);
  });

  it('caps range iterations', () => {
    expect(execError('{{ range $i := 1000000000 }}{{ end }}')).toContain('range iterations exceed 10000');
    expect(execError('{{ range $i := 200 }}{{ range $j := 200 }}{{ end }}{{ end }}')).toContain('range iterations exceed 10000');
  });

  it('caps strings built without printing them', () => {
    const t = '{{ $s := "ab" }}{{ range $i := 100 }}{{ $s = printf "%s%s" $s $s }}{{ end }}{{ len $s }}';
    expect(execError(t)).toContain('result of printf exceeds 65536 bytes');
    expect(x('{{ printf "%99999999d" 1 }}')).toMatch(/exceeds 65536 bytes|BADWIDTH/);
  });

  it('caps evaluation steps', () => {
    const body = '{{ $x := 1 }}'.repeat(400);
    const start = Date.now();
    expect(execError(`{{ range $i := 5000 }}${body}{{ end }}`)).toContain('evaluation steps');
    expect(Date.now() - start).toBeLessThan(5000);
  });

  it('refuses oversized and deeply nested sources', () => {
    expect(parseError('x'.repeat(64 * 1024 + 1)).message).toContain('65537 bytes, more than the 65536-byte limit');
    expect(parseError(`{{ ${'('.repeat(500)}1${')'.repeat(500)} }}`).message).toContain('nesting deeper than 100 levels');
    expect(parseError(`${'{{ if true }}'.repeat(500)}${'{{ end }}'.repeat(500)}`).message).toContain('nesting deeper than 100 levels');
  });
});

describe('query functions (query, first, label, value, strvalue, sortByLabel)', () => {
  const answers: Record<string, TemplateSample[]> = {
    up: [
      { labels: { __name__: 'up', instance: 'b:9100', job: 'node' }, v: 1 },
      { labels: { __name__: 'up', instance: 'a:9100', job: 'node' }, v: 0 },
    ],
    'up{instance="a:9100"}': [{ labels: { __name__: 'up', instance: 'a:9100', job: 'node' }, v: 0 }],
    'node_uname_info{instance="a:9100"}': [{ labels: { __name__: 'node_uname_info', instance: 'a:9100', nodename: 'alpha' }, v: 1 }],
    scalar: [{ labels: {}, v: 42 }],
    version: [{ labels: { __value__: 'v1.2.3' }, v: 0 }],
    none: [],
  };
  const asked: string[] = [];
  const query = async (expr: string) => {
    asked.push(expr);
    if (expr === 'broken(') throw new Error('1:8: parse error: unexpected end of input');
    const a = answers[expr];
    if (!a) throw new Error(`unexpected query ${expr}`);
    return a;
  };
  const q = (text: string, over: Partial<AlertTemplateData> = {}) => {
    asked.length = 0;
    return parseAlertTemplate(text).expandWithQueries({ ...data, ...over }, query);
  };

  it('reads samples of an instant query: first, value, label, range, sortByLabel', async () => {
    expect(await q('{{ with query "up" }}{{ . | first | value }}{{ end }}')).toBe('1');
    expect(await q('{{ query "up" | first | label "instance" }}')).toBe('b:9100');
    expect(await q('{{ range query "up" | sortByLabel "instance" }}{{ .Labels.instance }}={{ .Value }} {{ end }}')).toBe('a:9100=0 b:9100=1 ');
    expect(await q('{{ query "scalar" | first | value | humanize }}')).toBe('42');
    expect(await q('{{ query "version" | first | strvalue }}')).toBe('v1.2.3');
    expect(await q('{{ if not (query "none") }}no data{{ end }}')).toBe('no data');
  });

  it('runs queries built from the alert and from other queries’ answers, each once', async () => {
    const text = '{{ $i := (query (printf "up{instance=%q}" "a:9100") | first | label "instance") }}{{ with query (printf "node_uname_info{instance=%q}" $i) }}{{ . | first | label "nodename" }}{{ end }} {{ query "up" | len }} {{ query "up" | len }}';
    expect(await q(text)).toBe('alpha 2 2');
    expect(asked.sort()).toEqual(['node_uname_info{instance="a:9100"}', 'up', 'up{instance="a:9100"}']);
  });

  it('reports a failed query, an empty first and too many queries in the text', async () => {
    expect(await q('{{ query "broken(" }}')).toBe('<error expanding template: template: 1:4: executing at <query "broken(">: error calling query: 1:8: parse error: unexpected end of input>');
    expect(await q('{{ query "none" | first }}')).toMatch(/error calling first: first\(\) called on vector with no elements>$/);
    const many = Array.from({ length: MAX_TEMPLATE_QUERIES + 1 }, (_, i) => `{{ query "none${i}" }}`).join('');
    expect(await q(many)).toBe(`<error expanding template: the template runs more than ${MAX_TEMPLATE_QUERIES} distinct queries>`);
    // Without a query engine (the synchronous expansion), a query is an error, not an empty result.
    expect(execError('{{ query "up" }}')).toContain("error calling query: query needs the ruler's query engine");
  });

  it('answers externalURL and pathPrefix from the alert’s data', async () => {
    expect(await q('{{ externalURL }}|{{ pathPrefix }}', { externalURL: 'https://floe.example.com/prom' })).toBe('https://floe.example.com/prom|/prom');
    expect(await q('{{ pathPrefix }}', { externalURL: 'https://floe.example.com' })).toBe('');
  });
});
