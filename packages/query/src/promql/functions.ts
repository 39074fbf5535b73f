import type { ValueType } from './ast.ts';

/**
 * The PromQL functions Floe evaluates, with their argument and return types (Prometheus's
 * function table, as documented in docs/querying/functions.md). `optional` trailing arguments may
 * be left out; `variadic` repeats the last argument type any number of times.
 */
export interface FunctionSignature {
  args: ValueType[];
  optional?: number;
  variadic?: boolean;
  returns: ValueType;
}

const v = 'vector' as const;
const m = 'matrix' as const;
const s = 'scalar' as const;
const str = 'string' as const;

const math = (name: string): [string, FunctionSignature] => [name, { args: [v], returns: v }];
const overTime = (name: string): [string, FunctionSignature] => [name, { args: [m], returns: v }];
const dateFn = (name: string): [string, FunctionSignature] => [name, { args: [v], optional: 1, returns: v }];

export const FUNCTIONS: ReadonlyMap<string, FunctionSignature> = new Map<string, FunctionSignature>([
  ...[
    'abs', 'ceil', 'floor', 'exp', 'ln', 'log2', 'log10', 'sqrt', 'sgn',
    'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'tanh', 'asinh', 'acosh', 'atanh', 'deg', 'rad',
  ].map(math),
  ...[
    'avg_over_time', 'min_over_time', 'max_over_time', 'sum_over_time', 'count_over_time', 'last_over_time',
    'present_over_time', 'stddev_over_time', 'stdvar_over_time', 'changes', 'resets', 'rate', 'irate', 'increase',
    'delta', 'idelta', 'deriv',
    // Prometheus 3's experimental functions (behind --enable-feature=promql-experimental-functions there).
    'mad_over_time', 'first_over_time', 'ts_of_first_over_time', 'ts_of_last_over_time', 'ts_of_min_over_time', 'ts_of_max_over_time',
  ].map(overTime),
  ['double_exponential_smoothing', { args: [m, s, s], returns: v }],
  ...['day_of_month', 'day_of_week', 'day_of_year', 'days_in_month', 'hour', 'minute', 'month', 'year'].map(dateFn),
  ['absent', { args: [v], returns: v }],
  ['absent_over_time', { args: [m], returns: v }],
  ['quantile_over_time', { args: [s, m], returns: v }],
  ['predict_linear', { args: [m, s], returns: v }],
  ['histogram_quantile', { args: [s, v], returns: v }],
  ['clamp', { args: [v, s, s], returns: v }],
  ['clamp_min', { args: [v, s], returns: v }],
  ['clamp_max', { args: [v, s], returns: v }],
  ['round', { args: [v, s], optional: 1, returns: v }],
  ['label_replace', { args: [v, str, str, str, str], returns: v }],
  ['label_join', { args: [v, str, str, str], optional: 1, variadic: true, returns: v }],
  ['scalar', { args: [v], returns: s }],
  ['vector', { args: [s], returns: v }],
  ['time', { args: [], returns: s }],
  ['pi', { args: [], returns: s }],
  ['timestamp', { args: [v], returns: v }],
  ['sort', { args: [v], returns: v }],
  ['sort_desc', { args: [v], returns: v }],
  // Prometheus 3 experimental, as the *_over_time additions above.
  ['sort_by_label', { args: [v, str], optional: 1, variadic: true, returns: v }],
  ['sort_by_label_desc', { args: [v, str], optional: 1, variadic: true, returns: v }],
]);

/** Functions whose output keeps the input's metric name (every other one drops `__name__`). */
export const KEEPS_METRIC_NAME: ReadonlySet<string> = new Set(['last_over_time', 'first_over_time', 'sort', 'sort_desc', 'sort_by_label', 'sort_by_label_desc', 'label_replace', 'label_join']);
