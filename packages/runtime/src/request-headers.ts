import type { IncomingHttpHeaders } from 'node:http';
import type { IncomingHttpHeaders as Http2Headers } from 'node:http2';

/**
 * A request header's value as every Floe surface reads it: the first when the client repeated
 * the header (Node gives an array then), undefined when absent. One definition, so a repeated
 * Authorization or X-Tenant-ID is read the same way on every port.
 */
export function headerValue(headers: IncomingHttpHeaders | Http2Headers, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}
