import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolRequestSchema, ErrorCode, InitializeRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

/** The requests this server answers, by method, with the SDK's own schemas for them. */
const REQUEST_SCHEMAS = {
  initialize: InitializeRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
} as const;

export interface JsonRpcErrorResponse {
  jsonrpc: '2.0';
  id: string | number;
  error: { code: number; message: string };
}

/**
 * A JSON-RPC "Invalid params" (-32602) answer for a request whose params its method's schema
 * refuses (a tools/call without a tool name, arguments that are not an object), or undefined.
 * The SDK parses params inside its handler, where a refusal becomes an internal error (-32603)
 * carrying the validator's dump; a client should learn that it sent a bad request.
 */
export function invalidParamsAnswer(message: unknown): JsonRpcErrorResponse | undefined {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return undefined;
  const { method, id } = message as { method?: unknown; id?: unknown };
  if (typeof method !== 'string' || !Object.hasOwn(REQUEST_SCHEMAS, method)) return undefined;
  if (typeof id !== 'string' && typeof id !== 'number') return undefined; // a notification: nothing to answer
  const parsed = REQUEST_SCHEMAS[method as keyof typeof REQUEST_SCHEMAS].safeParse(message);
  if (parsed.success) return undefined;
  const issue = parsed.error.issues[0];
  const where = issue && issue.path.length > 0 ? issue.path.join('.') : 'params';
  return { jsonrpc: '2.0', id, error: { code: ErrorCode.InvalidParams, message: `Invalid params: ${where}: ${issue?.message ?? 'not what the method takes'}` } };
}

/**
 * Makes `transport` answer a request with bad params itself (invalidParamsAnswer) instead of
 * passing it on to the server it is connected to. Called after `server.connect(transport)`, so
 * that it wraps the server's own dispatch. At the transport each message of a JSON-RPC batch
 * arrives on its own, so a request with bad params gets the same answer in a batch as alone, and
 * the batch's other requests are answered as usual.
 */
export function answerInvalidParams(transport: Transport): void {
  const dispatch = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const refusal = invalidParamsAnswer(message);
    if (refusal === undefined) return dispatch?.(message, extra);
    transport.send(refusal).catch((err: unknown) => transport.onerror?.(err instanceof Error ? err : new Error(String(err))));
  };
}

/**
 * The first request id that a JSON-RPC batch uses twice, or undefined. JSON-RPC wants each
 * request answered, but the SDK's transport and server track a request by its id (the answer
 * waiting to be sent, the abort controller a notifications/cancelled reaches), so two with one id
 * would get one answer between them, and a cancellation could not say which it meant. Answering
 * each would mean renaming ids behind the SDK's back; refusing the batch (-32600, the SDK's own
 * answer to a batch it will not run) runs nothing and tells the client exactly what to fix.
 * Ids compare as JSON gives them: 1 and "1" are two ids.
 */
export function repeatedRequestId(body: unknown): string | number | undefined {
  if (!Array.isArray(body)) return undefined;
  const seen = new Set<string | number>();
  for (const message of body as unknown[]) {
    if (typeof message !== 'object' || message === null) continue;
    const { method, id } = message as { method?: unknown; id?: unknown };
    // Only requests: a notification has no id, and a response's id is one the server chose.
    if (typeof method !== 'string' || (typeof id !== 'string' && typeof id !== 'number')) continue;
    if (seen.has(id)) return id;
    seen.add(id);
  }
  return undefined;
}
