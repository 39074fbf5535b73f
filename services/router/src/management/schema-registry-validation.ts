import type { AttributeValueType, RegistryAttributeType, SchemaRegistry, SchemaRegistryDocument } from '@floe/meta';

/**
 * What a schema registry document means beyond its JSON Schema (which the routes enforce): one
 * definition per attribute key, entity type and metric name across a tenant's registries (so
 * resolution always answers one definition), references to defined attributes only, examples of
 * the declared type. Also checks a sample of telemetry attributes against the registries. Pure
 * functions: the routes load the registries, these judge them.
 */

export interface Problem {
  /** JSON-pointer-like location in the request body (`registry.attributes[2].key`). */
  path: string;
  /** errors make a registry unacceptable; warnings are advice. */
  severity: 'error' | 'warning';
  message: string;
}

// OpenTelemetry's attribute naming: lowercase namespaces separated by dots, snake_case words.
const OTEL_KEY = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/;

/** The typed map a value of a registry type lands in (arrays go to str as JSON text, like every non-scalar). */
export function storedTypeOf(type: RegistryAttributeType): AttributeValueType {
  switch (type) {
    case 'int':
      return 'int';
    case 'double':
      return 'double';
    case 'boolean':
      return 'bool';
    default:
      return 'str';
  }
}

function scalarMatches(type: string, v: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof v === 'string';
    case 'int':
      return typeof v === 'number' && Number.isInteger(v);
    case 'double':
      return typeof v === 'number';
    case 'boolean':
      return typeof v === 'boolean';
    default:
      return false;
  }
}

/** Whether a JSON value is of a registry attribute type (`int` accepts integers only, `double` any number). */
export function valueMatches(type: RegistryAttributeType, v: unknown): boolean {
  if (type.endsWith('[]')) return Array.isArray(v) && v.every((e) => scalarMatches(type.slice(0, -2), e));
  return scalarMatches(type, v);
}

const owners = <T>(registries: readonly SchemaRegistry[], names: (r: SchemaRegistry) => readonly T[]) => {
  const out = new Map<T, string>();
  for (const r of registries) for (const n of names(r)) if (!out.has(n)) out.set(n, r.id);
  return out;
};

/**
 * Problems of a registry document, given the tenant's other registries (the stored version of the
 * same id is left out by the caller, so an update may keep its own definitions).
 */
export function validateRegistryDocument(doc: SchemaRegistryDocument, others: readonly SchemaRegistry[], at = 'registry'): Problem[] {
  const problems: Problem[] = [];
  const error = (path: string, message: string) => problems.push({ path: `${at}.${path}`, severity: 'error', message });
  const keyOwner = owners(others, (r) => r.attributes.map((a) => a.key));
  const entityOwner = owners(others, (r) => r.entities.map((e) => e.type));
  const metricOwner = owners(others, (r) => r.metrics.map((m) => m.name));

  const ownKeys = new Set<string>();
  doc.attributes.forEach((a, i) => {
    const path = `attributes[${i}]`;
    if (ownKeys.has(a.key)) error(`${path}.key`, `attribute ${a.key} is defined twice`);
    ownKeys.add(a.key);
    const owner = keyOwner.get(a.key);
    if (owner !== undefined) error(`${path}.key`, `attribute ${a.key} is already defined in registry ${owner}`);
    if (!OTEL_KEY.test(a.key)) problems.push({ path: `${at}.${path}.key`, severity: 'warning', message: `attribute ${a.key} does not follow OpenTelemetry naming (lowercase, dot-separated namespaces, snake_case)` });
    (a.examples ?? []).forEach((ex, j) => {
      if (!valueMatches(a.type, ex)) error(`${path}.examples[${j}]`, `example ${JSON.stringify(ex)} is not of type ${a.type}`);
    });
  });

  const defined = (key: string) => ownKeys.has(key) || keyOwner.has(key);
  const references = (path: string, keys: readonly string[] | undefined) =>
    (keys ?? []).forEach((k, j) => {
      if (!defined(k)) error(`${path}[${j}]`, `attribute ${k} is not defined in this or another registry of the tenant`);
    });

  const ownEntities = new Set<string>();
  doc.entities.forEach((e, i) => {
    const path = `entities[${i}]`;
    if (ownEntities.has(e.type)) error(`${path}.type`, `entity ${e.type} is defined twice`);
    ownEntities.add(e.type);
    const owner = entityOwner.get(e.type);
    if (owner !== undefined) error(`${path}.type`, `entity ${e.type} is already defined in registry ${owner}`);
    references(`${path}.identifying_attributes`, e.identifying_attributes);
    references(`${path}.description_attributes`, e.description_attributes);
  });

  const ownMetrics = new Set<string>();
  doc.metrics.forEach((m, i) => {
    const path = `metrics[${i}]`;
    if (ownMetrics.has(m.name)) error(`${path}.name`, `metric ${m.name} is defined twice`);
    ownMetrics.add(m.name);
    const owner = metricOwner.get(m.name);
    if (owner !== undefined) error(`${path}.name`, `metric ${m.name} is already defined in registry ${owner}`);
    references(`${path}.attributes`, m.attributes);
  });
  return problems;
}

/** Problems of a sample of telemetry attributes (`{key: JSON value}`) against the tenant's registries. */
export function validateAttributeSample(sample: Readonly<Record<string, unknown>>, registries: readonly SchemaRegistry[]): Problem[] {
  const definitions = new Map(registries.flatMap((r) => r.attributes.map((a) => [a.key, { ...a, registry: r.id }] as const)));
  const problems: Problem[] = [];
  for (const [key, value] of Object.entries(sample)) {
    const path = `attributes[${JSON.stringify(key)}]`;
    const def = definitions.get(key);
    if (!def) problems.push({ path, severity: 'warning', message: `attribute ${key} is not defined in any registry of the tenant` });
    else if (!valueMatches(def.type, value)) problems.push({ path, severity: 'error', message: `attribute ${key} is ${def.type} in registry ${def.registry}; got ${JSON.stringify(value)}` });
  }
  return problems;
}

export const hasErrors = (problems: readonly Problem[]) => problems.some((p) => p.severity === 'error');
