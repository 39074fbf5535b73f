import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema } from 'fastify';
import { formPostSchema } from './openapi.ts';

// Query API parameters, shared by the Loki- and Prometheus-compatible APIs.

/** Parameters from the query string and, for POST, a form body (later values do not override). */
export class RequestParams {
  readonly #all: URLSearchParams;

  constructor(url: string, body?: unknown) {
    const q = url.indexOf('?');
    this.#all = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
    if (body instanceof URLSearchParams) for (const [k, v] of body) this.#all.append(k, v);
  }

  get(name: string): string | undefined {
    const v = this.#all.get(name);
    return v === null || v === '' ? undefined : v;
  }

  getAll(name: string): string[] {
    return this.#all.getAll(name).filter((v) => v !== '');
  }
}

/** Both APIs take POST with a form body on their query endpoints (Grafana uses GET): the body becomes parameters. */
export function acceptFormBodies(app: FastifyInstance, bodyLimit: number): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit }, (_req, body, done) => {
    done(null, new URLSearchParams(body as string));
  });
}

export type ParamsRequest = FastifyRequest<{ Params: Record<string, string> }>;

/** The same handler for GET and POST of a path; `schema` (documentation only) names the GET, its form twin the POST. */
export function getAndPost(scope: FastifyInstance, path: string, schema: FastifySchema, handler: (req: ParamsRequest, reply: FastifyReply) => Promise<unknown>): void {
  scope.get(path, { schema }, handler);
  scope.post(path, { schema: formPostSchema(schema) }, handler);
}
