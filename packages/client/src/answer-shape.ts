/**
 * What a caller relies on in an answer, checked before it reads a field: a router of another
 * version, a proxy or a stranger on the URL can answer 200 with `{"tenants":5}`, `null` or a
 * string, and a command should then say so rather than fail on a property of a number. Only what
 * the caller reads is named; further fields pass.
 *
 * - `'string' | 'number' | 'boolean'`: that type; `'any'`: anything present.
 * - `{ field: Shape, … }`: an object (not a list) whose named fields have their shapes; `{}` is any object.
 * - `[Shape]`: a list whose every item has the shape.
 * - `optional(Shape)`: the shape, or null, or absent.
 *
 * Written here rather than with zod, which the config package uses: every CLI command loads this
 * package, and importing zod alone takes ~65 ms there (measured 2026-12-07), a fifth of a command.
 */
export type Shape = 'string' | 'number' | 'boolean' | 'any' | readonly [Shape] | Optional | { readonly [field: string]: Shape };

// A symbol key: an object shape's fields are its string keys, so no field name can collide.
const OPTIONAL = Symbol('optional');
interface Optional<S extends Shape = Shape> {
  readonly [OPTIONAL]: S;
}

export const optional = <const S extends Shape>(shape: S): Optional<S> => ({ [OPTIONAL]: shape });

/**
 * The type of what a shape lets through, so that an answer's shape and the type its reader sees
 * are one definition: declare the shape `as const satisfies Shape` (an annotation `: Shape` loses
 * the fields) and read the answer as `AnswerOf<typeof THAT_SHAPE>`. Only the fields the shape
 * names are in the type; an optional one may be null or absent.
 */
export type AnswerOf<S> = S extends Optional<infer Inner>
  ? AnswerOf<Inner> | null
  : S extends 'string'
    ? string
    : S extends 'number'
      ? number
      : S extends 'boolean'
        ? boolean
        : S extends 'any'
          ? unknown
          : S extends readonly [infer Item]
            ? AnswerOf<Item>[]
            : S extends object
              ? FieldsOf<S>
              : never;

type OptionalKeys<S> = { [K in keyof S]: S[K] extends Optional ? K : never }[keyof S];
// Mapped over one object type so that an answer's type reads as its fields, not as an intersection.
type FieldsOf<S> = { [K in Exclude<keyof S, OptionalKeys<S>>]: AnswerOf<S[K]> } & { [K in OptionalKeys<S>]?: AnswerOf<S[K]> } extends infer T ? { [K in keyof T]: T[K] } : never;

const isOptional = (shape: Shape): shape is Optional => typeof shape === 'object' && OPTIONAL in shape;

/** What `shape` asks for, in words. */
function wanted(shape: Shape): string {
  if (typeof shape === 'string') return shape === 'any' ? 'a value' : `a ${shape}`;
  if (isOptional(shape)) return `${wanted(shape[OPTIONAL])} or null`;
  return Array.isArray(shape) ? 'a list' : 'an object';
}

/** A value as a message shows it: short, and never more of a stranger's answer than a glimpse. */
function shown(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object' && value !== null) return 'an object';
  const text = JSON.stringify(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

const fieldPath = (at: string, field: string) => (at === '' ? field : `${at}.${field}`);

/** Whether `value` is of the kind `shape` asks for at its top (a list, an object, a string, …), not looking inside. */
function ofKind(value: unknown, shape: Shape): boolean {
  if (isOptional(shape)) return value === undefined || value === null || ofKind(value, shape[OPTIONAL]);
  if (shape === 'any') return value !== undefined;
  if (typeof shape === 'string') return typeof value === shape;
  if (Array.isArray(shape)) return Array.isArray(value);
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Where `value` departs from `shape` and how (`tenants: expected a list, got 5`), or undefined
 * when it does not. The first departure only: one is enough to distrust the answer.
 */
export function shapeProblem(value: unknown, shape: Shape, at = ''): string | undefined {
  if (!ofKind(value, shape)) return `${at === '' ? '' : `${at}: `}expected ${wanted(shape)}, got ${shown(value)}`;
  if (isOptional(shape)) return value === undefined || value === null ? undefined : shapeProblem(value, shape[OPTIONAL], at);
  if (typeof shape === 'string') return undefined;
  if (Array.isArray(shape)) {
    const item = (shape as readonly [Shape])[0];
    for (let i = 0; i < (value as unknown[]).length; i++) {
      const found = shapeProblem((value as unknown[])[i], item, `${at}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [field, fieldShape] of Object.entries(shape as { readonly [field: string]: Shape })) {
    // Own fields only: `constructor` or `__proto__` named in a shape must come from the answer itself.
    const found = shapeProblem(Object.hasOwn(value as object, field) ? (value as Record<string, unknown>)[field] : undefined, fieldShape, fieldPath(at, field));
    if (found !== undefined) return found;
  }
  return undefined;
}
