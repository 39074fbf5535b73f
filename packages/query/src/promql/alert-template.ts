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
import { checkFunction, TEMPLATE_FUNCTIONS } from './alert-template-funcs.ts';
import { TemplateSyntaxError, parseTemplate, type Node } from './alert-template-parse.ts';
import { TMap, TStruct, utf8Length, type TValue } from './alert-template-values.ts';

export interface AlertTemplateData {
  labels: Record<string, string>;
  externalLabels: Record<string, string>;
  value: number;
  externalURL: string;
}

export interface AlertTemplate {
  /** The expanded text; an execution error yields `<error expanding template: MESSAGE>` instead of throwing. */
  expand(data: AlertTemplateData): string;
}

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
  return { expand: (data) => expand(text, nodes, data) };
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

function expand(text: string, nodes: Node[], data: AlertTemplateData): string {
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
    return new Executor(text, TEMPLATE_FUNCTIONS, dot, vars).run(nodes, dot);
  } catch (err) {
    return `<error expanding template: ${err instanceof Error ? err.message : String(err)}>`;
  }
}
