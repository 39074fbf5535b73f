import { STATUS_CODES } from 'node:http';
import type { FastifyPluginAsync, FastifySchema, RouteOptions } from 'fastify';
import { ERROR_RESPONSES, ref } from './management/schemas.ts';

/** A parameter the document lists and fastify never reads (documentation only). */
export interface ParameterDoc {
  name: string;
  description?: string;
  required?: boolean;
  /** JSON Schema of the value (a string when absent). */
  schema?: Record<string, unknown>;
}

declare module 'fastify' {
  interface FastifySchema {
    /** `<verb>_<resource>` (spec 2, Versioning 3). */
    operationId?: string;
    summary?: string;
    description?: string;
    tags?: readonly string[];
    /** OpenAPI security requirements; `[]` marks a route that needs no credentials. */
    security?: ReadonlyArray<Record<string, readonly string[]>>;
    // Documentation only, below: fastify validates and serializes with params, querystring, body,
    // headers and response alone, so routes that read their own input (the query APIs) are
    // described without being validated.
    /** Query parameters. */
    queryParameters?: readonly ParameterDoc[];
    /** Request headers. */
    headerParameters?: readonly ParameterDoc[];
    /** Descriptions and schemas of path parameters; a `:name` of the URL without one is a string. */
    pathParameters?: readonly ParameterDoc[];
    /** The query parameters come as an `application/x-www-form-urlencoded` body (or the query string). */
    formBody?: boolean;
    /** A request body in one of these media types, read as bytes. */
    rawBody?: { mediaTypes: readonly string[]; description: string };
    /** Without a `response` schema: what 200 answers, in which media types (JSON when absent). */
    returns?: { description: string; mediaTypes?: readonly string[] };
    /** The error body when it is not the ErrorEnvelope (Connect's). */
    errorBody?: Record<string, unknown>;
    /** The route answers 501 until it is implemented (no 200). */
    unimplemented?: boolean;
  }
}

/**
 * The OpenAPI 3.1 document of the management, session and query APIs, generated from the route
 * schemas (spec 2, Versioning 1): a route collector records every route as it is registered, and
 * the document is built from those records and the shared schemas. Management and session routes
 * are described by the schemas fastify validates with; the query APIs (Loki, Prometheus, Tempo and
 * Pyroscope compatible) parse their own parameters and answer in their own shapes, so their routes
 * carry documentation-only fields (queryRouteSchema) that fastify ignores. Nothing here is written
 * by hand except the document's preamble.
 */

export interface CollectedRoute {
  method: string;
  url: string;
  schema: FastifySchema | undefined;
}

/** Paths the document must cover: the management, session and query APIs; not /ready, /metrics, /mcp or OAuth. */
export const DOCUMENTED_PREFIXES = ['/api/v1/', '/ui/session', '/logquery/', '/metricquery/', '/tracequery/', '/profilequery/', '/api/profiles/'] as const;
export const isDocumented = (url: string) => DOCUMENTED_PREFIXES.some((p) => url === p.replace(/\/$/, '') || url.startsWith(p));

/** Records every route registered after this call, on this instance and its children. */
export function collectRoutes(app: { addHook(name: 'onRoute', hook: (r: RouteOptions) => void): unknown }): CollectedRoute[] {
  const routes: CollectedRoute[] = [];
  app.addHook('onRoute', (r: RouteOptions) => {
    for (const method of [r.method].flat()) {
      // HEAD twins of GET routes are fastify's own; OpenAPI describes GET only.
      if (method === 'HEAD') continue;
      routes.push({ method, url: r.url, schema: r.schema as FastifySchema | undefined });
    }
  });
  return routes;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** `Name#` (fastify's shared-schema reference) → `#/components/schemas/Name`. */
function toOpenApiSchema(schema: unknown): Json {
  if (Array.isArray(schema)) return schema.map(toOpenApiSchema);
  if (schema === null || typeof schema !== 'object') return schema as Json;
  const out: { [k: string]: Json } = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === '$id') continue;
    if (k === '$ref' && typeof v === 'string') {
      const m = /^([A-Za-z0-9_]+)#$/.exec(v);
      out[k] = m ? `#/components/schemas/${m[1]}` : v;
      continue;
    }
    out[k] = toOpenApiSchema(v);
  }
  return out;
}

export type QueryApiTag = 'logs' | 'metrics' | 'traces' | 'profiles';
export type QueryRouteDoc = Pick<FastifySchema, 'description' | 'queryParameters' | 'headerParameters' | 'pathParameters' | 'rawBody' | 'returns' | 'errorBody' | 'unimplemented'>;

/** The query APIs take API keys with the query scope, never a session (auth-plugin.ts). */
const QUERY_SECURITY: ReadonlyArray<Record<string, readonly string[]>> = [{ bearer: [] }, { basic: [] }];
const TENANT_HEADERS: readonly ParameterDoc[] = [
  { name: 'X-Tenant-ID', description: 'The tenant to query; required unless Basic credentials name it (the trace query API answers 400 without one, the others 401).' },
  { name: 'X-Dataset-ID', description: 'The dataset to query; default the API key’s dataset, else `default`.' },
];

/**
 * The schema of a query API route: documentation only. It carries none of the keys fastify
 * validates or serializes with (params, querystring, body, headers, response), so the route parses
 * its input and answers exactly as it would without one.
 */
export function queryRouteSchema(tag: QueryApiTag, operationId: string, summary: string, doc: QueryRouteDoc = {}): FastifySchema {
  return { ...doc, operationId, summary, tags: [tag], security: QUERY_SECURITY, headerParameters: [...TENANT_HEADERS, ...(doc.headerParameters ?? [])] };
}

/** The POST twin of a query route that also takes its parameters as a form body: `post_<id>`. */
export const formPostSchema = (schema: FastifySchema): FastifySchema => ({ ...schema, operationId: `post_${schema.operationId}`, summary: `${schema.summary} (parameters as a form)`, formBody: true });

/** `:name` of a route URL; `::` is the router's escape of a literal colon (`registries::validate`). */
const PATH_PARAM = /::|:([A-Za-z0-9_]+)/g;

/** `/tenants/:tenant_id` → `/tenants/{tenant_id}`. */
const openApiPath = (url: string) => url.replace(PATH_PARAM, (_m, name: string | undefined) => (name ? `{${name}}` : ':')).replace(/(.)\/$/, '$1');

function parameter(where: 'path' | 'query' | 'header', doc: ParameterDoc): Json {
  const p: { [k: string]: Json } = { name: doc.name, in: where, required: where === 'path' || doc.required === true, schema: toOpenApiSchema(doc.schema ?? { type: 'string' }) };
  if (doc.description) p.description = doc.description;
  return p;
}

function parameters(schema: FastifySchema, url: string): Json[] {
  const out: Json[] = [];
  const add = (where: 'path' | 'query', s: unknown) => {
    const obj = s as { properties?: Record<string, { description?: string }>; required?: string[] } | undefined;
    for (const [name, prop] of Object.entries(obj?.properties ?? {})) {
      const { description, ...rest } = prop;
      out.push(parameter(where, { name, description, required: (obj?.required ?? []).includes(name), schema: rest }));
    }
  };
  add('path', schema.params);
  const declared = new Set(Object.keys((schema.params as { properties?: object } | undefined)?.properties ?? {}));
  for (const [, name] of url.matchAll(PATH_PARAM)) {
    if (name && !declared.has(name)) out.push(parameter('path', schema.pathParameters?.find((d) => d.name === name) ?? { name }));
  }
  add('query', schema.querystring);
  // A form route takes its query parameters in the body (requestBody below).
  if (!schema.formBody) for (const d of schema.queryParameters ?? []) out.push(parameter('query', d));
  for (const d of schema.headerParameters ?? []) out.push(parameter('header', d));
  return out;
}

/** Media types without a schema: the query APIs answer in their upstream's own shapes. */
const mediaTypes = (types: readonly string[]) => Object.fromEntries(types.map((t) => [t, {}]));

function requestBody(schema: FastifySchema): Json | undefined {
  if (schema.body) return { required: true, content: { 'application/json': { schema: toOpenApiSchema(schema.body) } } };
  if (schema.formBody && schema.queryParameters?.length) {
    const properties = Object.fromEntries(schema.queryParameters.map((d) => [d.name, toOpenApiSchema({ ...(d.schema ?? { type: 'string' }), ...(d.description ? { description: d.description } : {}) })]));
    return { required: false, description: 'The query parameters as a form; the query string works too.', content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', properties } } } };
  }
  if (schema.rawBody) return { required: true, description: schema.rawBody.description, content: mediaTypes(schema.rawBody.mediaTypes) };
  return undefined;
}

function responses(schema: FastifySchema): { [k: string]: Json } {
  const out: { [k: string]: Json } = {};
  if (!schema.response && !schema.unimplemented) out['200'] = { description: schema.returns?.description ?? 'OK', content: mediaTypes(schema.returns?.mediaTypes ?? ['application/json']) };
  // Every route answers errors in the envelope (or errorBody), whether or not its schema says so.
  const errors = schema.errorBody ?? ref('ErrorEnvelope');
  const declared = schema.unimplemented ? { 501: { ...errors, description: 'Not implemented yet' } } : schema.response;
  for (const [code, s] of Object.entries({ '4xx': errors, '5xx': errors, ...(declared as object | undefined) } as Record<string, { description?: string; type?: unknown }>)) {
    const key = code.toUpperCase(); // 4xx → 4XX
    const description = s.description ?? (/^\d{3}$/.test(code) ? (STATUS_CODES[code] ?? code) : code === '4xx' ? 'Client error' : 'Server error');
    if (s.type === 'null') {
      out[key] = { description };
      continue;
    }
    const body = toOpenApiSchema(s) as { [k: string]: Json };
    // A response that is only a reference keeps the description beside it, not inside the schema.
    out[key] = { description, content: { 'application/json': { schema: body } } };
  }
  return out;
}

export interface OpenApiInfo {
  title: string;
  version: string;
  description: string;
}

export function buildOpenApiDocument(routes: readonly CollectedRoute[], sharedSchemas: Record<string, unknown>, info: OpenApiInfo) {
  const paths: { [path: string]: { [method: string]: Json } } = {};
  for (const r of routes) {
    if (!isDocumented(r.url)) continue;
    const schema = r.schema ?? {};
    const op: { [k: string]: Json } = {};
    if (schema.operationId) op.operationId = schema.operationId;
    if (schema.summary) op.summary = schema.summary;
    if (schema.description) op.description = schema.description;
    if (schema.tags) op.tags = [...schema.tags];
    const params = parameters(schema, r.url);
    if (params.length > 0) op.parameters = params;
    const body = requestBody(schema);
    if (body) op.requestBody = body;
    op.responses = responses(schema);
    if (schema.security) op.security = schema.security.map((s) => Object.fromEntries(Object.entries(s).map(([k, v]) => [k, [...v]])));
    (paths[openApiPath(r.url)] ??= {})[r.method.toLowerCase()] = op;
  }
  const components: { [k: string]: Json } = {};
  for (const [id, s] of Object.entries(sharedSchemas)) components[id] = toOpenApiSchema(s);
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, description: info.description },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    security: [{ bearer: [] }, { session: [] }],
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    components: {
      schemas: components,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An API key (with `X-Tenant-ID` naming its tenant, optional here) or the break-glass `auth.admin_api_key`.' },
        session: { type: 'apiKey', in: 'cookie', name: 'floe_session', description: 'The session cookie set by POST /ui/session.' },
        basic: { type: 'http', scheme: 'basic', description: 'Query APIs: the tenant as user and an API key as password, for clients that cannot set X-Tenant-ID.' },
      },
    },
  };
}

export type OpenApiDocument = ReturnType<typeof buildOpenApiDocument>;

const INFO: OpenApiInfo = {
  title: 'Floe management and query API',
  version: '1',
  description:
    'Tenants, datasets, users, memberships, API keys and sessions, and the query APIs: logs (Loki-compatible, /logquery), metrics (Prometheus-compatible, /metricquery), traces (Tempo-compatible, /tracequery) and profiles (Pyroscope-compatible, /profilequery and /api/profiles). Every error answers with the envelope `{"status":"error","errorType":…,"error":…}` (schema ErrorEnvelope), except Pyroscope\'s Connect API, which answers Connect\'s error. Management request bodies are validated against the schemas below; unknown fields are refused. The query APIs read their parameters as their upstreams do and answer in their upstreams\' shapes, which this document names but does not spell out.',
};

/**
 * Serves the document at `/openapi.json` (inside the /api/v1 prefix), built once on first request,
 * when every route is registered.
 */
export const openApiRoute: FastifyPluginAsync<{ routes: readonly CollectedRoute[] }> = async (app, opts) => {
  let doc: OpenApiDocument | undefined;
  app.get(
    '/openapi.json',
    {
      config: { public: true },
      schema: { operationId: 'get_openapi', summary: 'This document (OpenAPI 3.1)', tags: ['meta'], security: [], response: { 200: { type: 'object', additionalProperties: true }, ...ERROR_RESPONSES } },
    },
    async () => (doc ??= buildOpenApiDocument(opts.routes, app.getSchemas(), INFO)),
  );
};
