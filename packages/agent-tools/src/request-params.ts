import { CallToolRequestSchema, ErrorCode, InitializeRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

/** The requests this server answers, by method, with the SDK's own schemas for them. */
const REQUEST_SCHEMAS = {
  initialize: InitializeRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
} as const;

export interface JsonRpcErrorResponse {
  jsonrpc: '2.0';
  id: string | number | null;
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
