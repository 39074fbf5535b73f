/**
 * Alert templates: the Go text/template strings in alerting rules' labels and annotations
 * (`summary: "High latency on {{ $labels.instance }}: {{ $value | humanizeDuration }}"`),
 * expanded per alert as Prometheus expands them.
 *
 * Prometheus executes each template with the data struct {Labels, ExternalLabels, ExternalURL,
 * Value} as the dot and a prelude defining $labels, $externalLabels, $externalURL and $value; the
 * same names are predefined here. Parsing checks syntax and function names, so a rule file with a
 * broken or unsupported template is rejected when uploaded; execution never throws, because a
 * failing template must not stop an alert from firing — like Prometheus, the field then reads
 * `<error expanding template: …>`.
 *
 * The pieces: alert-template-parse.ts (lexer, parser, AST), alert-template-exec.ts (evaluator and
 * its bounds), alert-template-funcs.ts (builtins and Prometheus's functions) and
 * alert-template-values.ts (value kinds and Go's fmt formatting).
 */

import { FloeError } from '@floe/errors';
import { Executor } from './alert-template-exec.ts';
import { boundFunctions, checkFunction, templateSample } from './alert-template-funcs.ts';
import { TemplateSyntaxError, parseTemplate, type Node } from './alert-template-parse.ts';
import { TMap, TStruct, utf8Length, type TValue } from './alert-template-values.ts';

export interface AlertTemplateData {
  labels: Record<string, string>;
  externalLabels: Record<string, string>;
  value: number;
  externalURL: string;
}

/** A sample of an instant query's result, as the template's `query` function returns it. */
export interface TemplateSample {
  labels: Record<string, string>;
  v: number;
}

/** The rule's instant query at the alert's evaluation time (a scalar as one sample without labels). */
export type TemplateQuery = (expr: string) => Promise<readonly TemplateSample[]>;

export interface AlertTemplate {
  /**
   * The expanded text; an execution error yields `<error expanding template: MESSAGE>` instead of
   * throwing. Without a query engine, a `query` call is such an error.
   */
  expand(data: AlertTemplateData): string;
  /** The same, with `query` answered by the rule's engine (never rejects). */
  expandWithQueries(data: AlertTemplateData, query: TemplateQuery): Promise<string>;
}

/** Distinct queries one expansion may run (Prometheus has no bound; a template in a `range` could run thousands). */
export const MAX_TEMPLATE_QUERIES = 16;

/** Template source beyond this is refused at parse time. */
export const MAX_ALERT_TEMPLATE_BYTES = 64 * 1024;

const PREDEFINED = ['$labels', '$externalLabels', '$value', '$externalURL'];

const templateError = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_ALERT_TEMPLATE' });

/**
 * Parses a template, throwing a FloeError (bad_data, FLOE_ERR_ALERT_TEMPLATE) on a syntax error or
 * a function that is unknown or unsupported. The message names only the problem and its line and
 * column; the caller prefixes the rule and field.
 */
export function parseAlertTemplate(text: string): AlertTemplate {
  if (utf8Length(text) > MAX_ALERT_TEMPLATE_BYTES) {
    throw templateError(`template is ${utf8Length(text)} bytes, more than the ${MAX_ALERT_TEMPLATE_BYTES}-byte limit`);
  }
  let nodes: Node[];
  try {
    nodes = parseTemplate(text, checkFunction, PREDEFINED);
  } catch (err) {
    if (err instanceof TemplateSyntaxError) throw templateError(err.message);
    // Anything else (a stack overflow on pathological input) is still the template's fault.
    throw templateError(`template: ${(err as Error).message}`);
  }
  return {
    expand: (data) => expand(text, nodes, data, noQueries),
    expandWithQueries: (data, query) => expandWithQueries(text, nodes, data, query),
  };
}

const noQueries = (): never => {
  throw new Error('query needs the ruler\'s query engine, which this expansion has none of');
};

/**
 * The executor is synchronous (Go's text/template calls functions inline), queries are not: the
 * template runs with the answers known so far, a query not yet answered reading as an empty
 * result; the queries it asked for are run, and it runs again, until a run asks for nothing new.
 * A template is deterministic given its answers, so the last run is what Prometheus would print.
 * Each round answers at least one new query, so at most MAX_TEMPLATE_QUERIES + 1 runs.
 */
async function expandWithQueries(text: string, nodes: Node[], data: AlertTemplateData, query: TemplateQuery): Promise<string> {
  const answers = new Map<string, readonly TValue[] | Error>();
  for (;;) {
    const wanted = new Set<string>();
    const out = expand(text, nodes, data, (expr) => {
      const answer = answers.get(expr);
      if (answer instanceof Error) throw answer;
      if (answer) return answer;
      wanted.add(expr);
      return [];
    });
    if (wanted.size === 0) return out;
    if (answers.size + wanted.size > MAX_TEMPLATE_QUERIES) return `<error expanding template: the template runs more than ${MAX_TEMPLATE_QUERIES} distinct queries>`;
    await Promise.all(
      [...wanted].map(async (expr) => {
        try {
          answers.set(expr, (await query(expr)).map((x) => templateSample(x.labels, x.v)));
        } catch (err) {
          answers.set(expr, err instanceof Error ? err : new Error(String(err)));
        }
      }),
    );
  }
}

/** Parses and expands in one go; a parse error is reported in the text, as an execution error is. */
export function expandAlertTemplate(text: string, data: AlertTemplateData): string {
  let template: AlertTemplate;
  try {
    template = parseAlertTemplate(text);
  } catch (err) {
    return `<error expanding template: ${(err as Error).message}>`;
  }
  return template.expand(data);
}

function expand(text: string, nodes: Node[], data: AlertTemplateData, query: (expr: string) => readonly TValue[]): string {
  const labels = new TMap(new Map(Object.entries(data.labels)));
  const externalLabels = new TMap(new Map(Object.entries(data.externalLabels)));
  // Field order is Prometheus's struct order, which is how `{{ . }}` prints.
  const dot = new TStruct(
    new Map<string, TValue>([
      ['Labels', labels],
      ['ExternalLabels', externalLabels],
      ['ExternalURL', data.externalURL],
      ['Value', data.value],
    ]),
  );
  const vars = { $labels: labels, $externalLabels: externalLabels, $value: data.value, $externalURL: data.externalURL };
  try {
    return new Executor(text, boundFunctions({ externalURL: data.externalURL, query }), dot, vars).run(nodes, dot);
  } catch (err) {
    return `<error expanding template: ${err instanceof Error ? err.message : String(err)}>`;
  }
}
