import type { FastifyPluginAsync } from 'fastify';
import { FloeError } from '@floe/errors';
import { PyroQuerierService, type DescMessage, type MessageInitShape } from '@floe/proto';
import { callerCredentials } from '../auth-plugin.ts';
import { rowsOf } from '../logquery/results.ts';
import { UNIMPLEMENTED_METHODS, querierService, type CallContext, type QuerierServiceImpl } from './connect-methods.ts';
import {
  CONNECT_CONTENT_TYPES,
  CONNECT_ERROR_SCHEMA,
  checkProtocolVersion,
  codecOf,
  connectError,
  decodeConnectMessage as decodeMessage,
  decodedConnectBody as decodedBody,
  deadlineMsOf,
  encodeConnectMessage as encodeMessage,
  encodedConnectBody as encodedBody,
  headerValue,
} from '@floe/runtime';
import type { ProfileSurfaceOptions } from './plugin.ts';
import { queryRouteSchema } from '../openapi.ts';

/**
 * Pyroscope's Connect API under /profilequery: `POST /profilequery/querier.v1.QuerierService/<Method>`,
 * which is what Grafana's Pyroscope data source calls when its URL is `http://<floe>/profilequery`
 * (reference/api-contracts.md §0 S1, §4.4, §4.5). The enclosing scope authenticates and charges
 * the query budget as for the legacy routes; this scope only swaps the body parsing (raw bytes of
 * any type, so the codec check answers in Connect's shape) and the error shape (Connect's JSON,
 * for the auth hook's refusals too, as fastify renders a hook's error with the route's handler).
 */

/** Connect request messages are a few selectors; a megabyte leaves room and bounds the decoder. */
export const CONNECT_BODY_LIMIT = 1024 * 1024;

const SERVICE = PyroQuerierService.typeName;

type AnyHandler = (req: unknown, ctx: CallContext) => Promise<MessageInitShape<DescMessage>>;

export const connectQuerierPlugin: FastifyPluginAsync<ProfileSurfaceOptions> = async (app, opts) => {
  const methods = new Map(PyroQuerierService.methods.map((m) => [m.name, m]));

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: CONNECT_BODY_LIMIT }, (_req, body, done) => done(null, body));
  app.setErrorHandler((err: unknown, req, reply) => {
    const out = connectError(err);
    if (out.unexpected) req.log.error({ err }, 'unexpected error');
    void reply.code(out.status).headers(out.headers).type('application/json').send(out.body);
  });

  const codecs = Object.values(CONNECT_CONTENT_TYPES);
  const schema = queryRouteSchema('profiles', 'call_pyroscope_querier', `A unary call of Pyroscope's ${SERVICE} (Connect protocol)`, {
    pathParameters: [{ name: 'method', schema: { type: 'string', enum: [...methods.keys()].filter((m) => !Object.hasOwn(UNIMPLEMENTED_METHODS, m)) }, description: 'The method; the service’s others answer unimplemented.' }],
    headerParameters: [
      { name: 'Connect-Protocol-Version', schema: { type: 'string', enum: ['1'] }, description: 'Connect protocol version.' },
      { name: 'Connect-Timeout-Ms', schema: { type: 'string', pattern: '^\\d{1,10}$' }, description: 'Deadline of the call; at most the router’s query timeout.' },
    ],
    rawBody: { mediaTypes: codecs, description: 'The method’s request message, bare: protobuf or proto-JSON as Content-Type says; gzip with Content-Encoding.' },
    returns: { description: 'The method’s response message in the request’s codec.', mediaTypes: codecs },
    errorBody: CONNECT_ERROR_SCHEMA,
  });

  app.post<{ Params: { method: string } }>(`/${SERVICE}/:method`, { schema }, async (req, reply) => {
    const started = Date.now();
    const name = req.params.method;
    if (Object.hasOwn(UNIMPLEMENTED_METHODS, name)) throw new FloeError('not_implemented', `${SERVICE}/${name} is not implemented by Floe: ${UNIMPLEMENTED_METHODS[name]}`, { code: 'FLOE_ERR_CONNECT_METHOD' });
    const method = methods.get(name);
    if (!method) throw new FloeError('not_implemented', `unknown method ${SERVICE}/${name.slice(0, 64)}`, { code: 'FLOE_ERR_CONNECT_METHOD' });

    checkProtocolVersion(headerValue(req.headers, 'connect-protocol-version'));
    const codec = codecOf(headerValue(req.headers, 'content-type'));
    const deadlineMs = deadlineMsOf(headerValue(req.headers, 'connect-timeout-ms'), opts.queryTimeoutMs);
    const body = decodedBody(Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0), headerValue(req.headers, 'content-encoding'), CONNECT_BODY_LIMIT);
    const input = decodeMessage(method.input, codec, body);

    const creds = callerCredentials(req);
    const ctx: CallContext = {
      table: await opts.tableOf(req),
      // Each query gets what is left of the call's deadline, so a method running several (Diff,
      // several matchers) still answers within it.
      async run(plan) {
        const left = deadlineMs - (Date.now() - started);
        if (left <= 0) throw new FloeError('timeout', 'the request deadline passed before the query ran', { code: 'FLOE_ERR_CONNECT_DEADLINE' });
        return rowsOf(await opts.querier.query(creds, { sql: plan.sql, params: plan.params, hints: plan.hints }, left));
      },
    };
    const handler = querierService[method.localName as keyof QuerierServiceImpl] as AnyHandler;
    const encoded = await encodedBody(encodeMessage(method.output, codec, await handler(input, ctx)), headerValue(req.headers, 'accept-encoding'));
    if (encoded.encoding) void reply.header('content-encoding', encoded.encoding);
    return reply.code(200).type(CONNECT_CONTENT_TYPES[codec]).send(encoded.body);
  });
};
