import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { FloeError } from '@floe/errors';
import {
  lowerLogQuery,
  lowerStreamSelector,
  parseLogQL,
  planLabelNames,
  planLabelValues,
  planLogSelect,
  planSeries,
  type PlannedQuery,
  type TimeRange,
} from '@floe/query';
import { logsTable } from '@floe/schema';
import { callerCredentials } from '../auth-plugin.ts';
import type { QuerierClient } from '../querier-client.ts';
import { HOUR_NS, RequestParams, nowNs, parseDirection, parseDurationParam, parseLimit, parseRange, parseTime, requireQuery } from './params.ts';
import { rowsOf, toStreams, type Row } from './results.ts';

/**
 * The Loki-compatible log query API (spec 1, "Log query API"; reference/api-contracts.md §1),
 * served under both `/api/v1` and `/loki/api/v1` of the /logquery mount, since Grafana's Loki
 * data source appends `/loki/api/v1/...` to its URL. Each request goes parse → lower → plan
 * (@floe/query) → one SQL call to a querier with the request's deadline → Loki's JSON.
 *
 * Auth and the per-tenant query budget come from the enclosing scope (app.ts), as for /tracequery.
 */
export interface LogQueryOptions {
  querier: QuerierClient;
  queryTimeoutMs: number;
}

export const LOKI_PREFIXES = ['/api/v1', '/loki/api/v1'] as const;

/** Request header that asks for the categorized (three-element) `values` encoding. */
export const ENCODING_FLAGS_HEADER = 'x-loki-response-encoding-flags';
const CATEGORIZE_LABELS = 'categorize-labels';

/** Endpoints of Loki's API that Floe does not serve yet: 501 in the error envelope, not a 404. */
const NOT_YET = ['tail', 'detected_fields', 'detected_field/:name/values', 'detected_labels', 'index/stats', 'index/volume', 'index/volume_range', 'patterns'] as const;

type Req = FastifyRequest<{ Params: Record<string, string> }>;

const categorize = (req: FastifyRequest) => {
  const raw = req.headers[ENCODING_FLAGS_HEADER];
  const flags = (Array.isArray(raw) ? raw.join(',') : (raw ?? '')).split(',').map((f) => f.trim().toLowerCase());
  return flags.includes(CATEGORIZE_LABELS);
};

export const logQueryPlugin: FastifyPluginAsync<LogQueryOptions> = async (app, opts) => {
  // Loki accepts POST with a form body on its query endpoints; Grafana uses GET.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 256 * 1024 }, (_req, body, done) => {
    done(null, new URLSearchParams(body as string));
  });

  const params = (req: FastifyRequest) => new RequestParams(req.url, req.body);
  const run = async (req: FastifyRequest, plan: PlannedQuery): Promise<Row[]> => {
    const table = await opts.querier.query(callerCredentials(req), { sql: plan.sql, params: plan.params, hints: plan.hints }, opts.queryTimeoutMs);
    return rowsOf(table);
  };

  /** A log query over `range`, shaped as a `streams` result. */
  const streamsQuery = async (req: FastifyRequest, reply: FastifyReply, query: string, range: TimeRange, p: RequestParams) => {
    const direction = parseDirection(p.get('direction'));
    const limit = parseLimit(p.get('limit'));
    const expr = parseLogQL(query);
    const ir = lowerLogQuery(expr, query, { range, direction, limit });
    const withMetadata = categorize(req);
    const rows = await run(req, planLogSelect(ir, logsTable, { metadata: withMetadata }));
    const data: Record<string, unknown> = { resultType: 'streams', result: toStreams(rows, withMetadata), stats: {} };
    if (withMetadata) data.encodingFlags = [CATEGORIZE_LABELS];
    return reply.type('application/json').send({ status: 'success', data });
  };

  const routes = (scope: FastifyInstance) => {
    const both = (path: string, handler: (req: Req, reply: FastifyReply) => Promise<unknown>) => {
      scope.get(path, handler);
      scope.post(path, handler);
    };

    both('/query_range', async (req, reply) => {
      const p = params(req);
      const query = requireQuery(p);
      const range = parseRange(p, nowNs(), HOUR_NS);
      const step = p.get('step');
      if (step !== undefined && parseDurationParam('step', step) <= 0n) throw new FloeError('bad_data', 'invalid step: must be positive');
      return streamsQuery(req, reply, query, range, p);
    });

    // Instant: the most recent lines over the hour ending at `time` (spec 1, Limits).
    both('/query', async (req, reply) => {
      const p = params(req);
      const query = requireQuery(p);
      const time = parseTime('time', p.get('time'), nowNs());
      return streamsQuery(req, reply, query, { startNs: time - HOUR_NS, endNs: time + 1n }, p);
    });

    both('/labels', async (req, reply) => {
      const p = params(req);
      const range = parseRange(p, nowNs(), HOUR_NS);
      const q = p.get('query');
      const streams = q === undefined ? [] : lowerStreamSelector(parseLogQL(q), q);
      const rows = await run(req, planLabelNames({ kind: 'label_names', table: 'logs', range, streams }, logsTable));
      return reply.type('application/json').send({ status: 'success', data: rows.map((r) => String(r.name)) });
    });

    both('/label/:name/values', async (req, reply) => {
      const p = params(req);
      const range = parseRange(p, nowNs(), HOUR_NS);
      const label = req.params.name ?? '';
      if (label === '') throw new FloeError('bad_data', 'missing label name');
      const q = p.get('query');
      const streams = q === undefined ? [] : lowerStreamSelector(parseLogQL(q), q);
      const rows = await run(req, planLabelValues({ kind: 'label_values', table: 'logs', range, label, streams }, logsTable));
      return reply.type('application/json').send({ status: 'success', data: rows.map((r) => String(r.value)) });
    });

    both('/series', async (req, reply) => {
      const p = params(req);
      const range = parseRange(p, nowNs(), HOUR_NS);
      const matches = p.getAll('match[]');
      if (matches.length === 0) {
        // Loki also takes a single `match`; a request with neither is refused like Loki refuses it.
        const single = p.get('match');
        if (single === undefined) throw new FloeError('bad_data', 'at least one match[] selector is required', { code: 'FLOE_ERR_LOGQL_PARAM' });
        matches.push(single);
      }
      const selectors = matches.map((m) => lowerStreamSelector(parseLogQL(m), m));
      const rows = await run(req, planSeries({ kind: 'series', table: 'logs', range, selectors }, logsTable));
      const data = rows.map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => typeof v === 'string' && v !== '')));
      return reply.type('application/json').send({ status: 'success', data });
    });

    for (const path of NOT_YET) {
      both(`/${path}`, async () => {
        throw new FloeError('not_implemented', `/${path.replace(':name', '{name}')} is not implemented yet`, { code: 'FLOE_ERR_LOGQL_ENDPOINT' });
      });
    }
  };

  for (const prefix of LOKI_PREFIXES) await app.register(async (scope) => routes(scope), { prefix });
};
