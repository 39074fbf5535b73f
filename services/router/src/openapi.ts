import { STATUS_CODES } from 'node:http';
import type { FastifyPluginAsync, FastifySchema, RouteOptions } from 'fastify';
import { ERROR_RESPONSES } from './management/schemas.ts';

declare module 'fastify' {
  interface FastifySchema {
    /** `<verb>_<resource>` (spec 2, Versioning 3). */
    operationId?: string;
    summary?: string;
    description?: string;
    tags?: readonly string[];
    /** OpenAPI security requirements; `[]` marks a route that needs no credentials. */
    security?: ReadonlyArray<Record<string, readonly string[]>>;
  }
}

/**
 * The OpenAPI 3.1 document of the management and session APIs, generated from the route schemas
 * that fastify validates with (spec 2, Versioning 1): a route collector records every route as it
 * is registered, and the document is built from those records and the shared schemas. Nothing here
 * is written by hand except the document's preamble.
 */

export interface CollectedRoute {
  method: string;
  url: string;
  schema: FastifySchema | undefined;
}

/** Paths the document must cover; everything else (query APIs, /ready) has its own contracts. */
export const DOCUMENTED_PREFIXES = ['/api/v1/', '/ui/session'] as const;
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

/** `/tenants/:tenant_id` → `/tenants/{tenant_id}`; `::` is the router's escape of a literal colon (`registries::validate`). */
const openApiPath = (url: string) => url.replace(/::|:([A-Za-z0-9_]+)/g, (_m, name: string | undefined) => (name ? `{${name}}` : ':')).replace(/(.)\/$/, '$1');

function parameters(schema: FastifySchema): Json[] {
  const out: Json[] = [];
  const add = (where: 'path' | 'query', s: unknown) => {
    const obj = s as { properties?: Record<string, { description?: string }>; required?: string[] } | undefined;
    for (const [name, prop] of Object.entries(obj?.properties ?? {})) {
      const { description, ...rest } = prop;
      const p: { [k: string]: Json } = { name, in: where, required: where === 'path' || (obj?.required ?? []).includes(name), schema: toOpenApiSchema(rest) };
      if (description) p.description = description;
      out.push(p);
    }
  };
  add('path', schema.params);
  add('query', schema.querystring);
  return out;
}

function responses(schema: FastifySchema): { [k: string]: Json } {
  const out: { [k: string]: Json } = {};
  for (const [code, s] of Object.entries((schema.response ?? {}) as Record<string, { description?: string; type?: unknown }>)) {
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
    const params = parameters(schema);
    if (params.length > 0) op.parameters = params;
    if (schema.body) op.requestBody = { required: true, content: { 'application/json': { schema: toOpenApiSchema(schema.body) } } };
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
      },
    },
  };
}

export type OpenApiDocument = ReturnType<typeof buildOpenApiDocument>;

const INFO: OpenApiInfo = {
  title: 'Floe management API',
  version: '1',
  description:
    'Tenants, datasets, users, memberships, API keys and sessions. Every error answers with the envelope `{"status":"error","errorType":…,"error":…}` (schema ErrorEnvelope). Request bodies are validated against the schemas below; unknown fields are refused.',
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
