import { FloeError } from '@floe/errors';

/**
 * Operations on one float at a time: the arithmetic and comparison operators of binary
 * expressions (LogQL's metric queries use the same ones) and the element-wise math and date
 * functions. `^` is Go's math.Pow where it differs from Math.pow (1 to a NaN power, and -1 to
 * ±Inf, are 1); the date functions read the UTC fields of the time they are given.
 */

function goPow(a: number, b: number): number {
  if (a === 1 || b === 0) return 1;
  if (a === -1 && !Number.isFinite(b) && !Number.isNaN(b)) return 1;
  return Math.pow(a, b);
}

export function arith(op: string, a: number, b: number): number {
  switch (op) {
    case '+':
      return a + b;
    case '-':
      return a - b;
    case '*':
      return a * b;
    case '/':
      return a / b;
    case '%':
      return a % b;
    case '^':
      return goPow(a, b);
    case 'atan2':
      return Math.atan2(a, b);
    default:
      throw new FloeError('internal', `not an arithmetic operator: ${op}`);
  }
}

export function compare(op: string, a: number, b: number): boolean {
  switch (op) {
    case '==':
      return a === b;
    case '!=':
      return a !== b;
    case '>':
      return a > b;
    case '<':
      return a < b;
    case '>=':
      return a >= b;
    case '<=':
      return a <= b;
    default:
      throw new FloeError('internal', `not a comparison operator: ${op}`);
  }
}

export const MATH_FNS: Record<string, (v: number) => number> = {
  abs: Math.abs,
  ceil: Math.ceil,
  floor: Math.floor,
  exp: Math.exp,
  ln: Math.log,
  log2: Math.log2,
  log10: Math.log10,
  sqrt: Math.sqrt,
  sgn: (v) => (v > 0 ? 1 : v < 0 ? -1 : v),
  sin: Math.sin,
  cos: Math.cos,
  tan: Math.tan,
  asin: Math.asin,
  acos: Math.acos,
  atan: Math.atan,
  sinh: Math.sinh,
  cosh: Math.cosh,
  tanh: Math.tanh,
  asinh: Math.asinh,
  acosh: Math.acosh,
  atanh: Math.atanh,
  deg: (v) => (v * 180) / Math.PI,
  rad: (v) => (v * Math.PI) / 180,
};

export const DAY_FNS: Record<string, (d: Date) => number> = {
  day_of_month: (d) => d.getUTCDate(),
  day_of_week: (d) => d.getUTCDay(),
  day_of_year: (d) => Math.floor((Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86_400_000) + 1,
  days_in_month: (d) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate(),
  hour: (d) => d.getUTCHours(),
  minute: (d) => d.getUTCMinutes(),
  month: (d) => d.getUTCMonth() + 1,
  year: (d) => d.getUTCFullYear(),
};
