/**
 * @floe/runtime: process plumbing shared by every service: the module registry (start a
 * dependency graph of modules, stop it in reverse), the admin HTTP server with /ready, and
 * signal handling that drains before exit.
 */
export { resolveOrder, startModules } from './registry.ts';
export type { ModuleDef, StartedModules } from './registry.ts';
export { startAdminServer } from './admin-server.ts';
export { serverTlsFromConfig, type CertificatePair, type ServerTls, type ServerTlsOptions } from './server-tls.ts';
export { localUrl, trustConfiguredAuthorities } from './client-trust.ts';
export { clientCertificateFromEnv, presentProcessCertificate, type CertificateSource } from './client-certificate.ts';
export { listenLoopback, type LoopbackListener } from './loopback-listener.ts';
export { SHARED_PORT_ALPN, cutExchange, servePortOverHttp2 } from './http2-port.ts';
export { arrivalDeadlines, carriesBody, type ArrivalDeadlines, type ArrivingRequest } from './arrival-deadline.ts';
export type { AdminAction, AdminAnswer, AdminServer } from './admin-server.ts';
export { SERVICE_NAMES, isServiceName } from './service.ts';
export type { ServiceHandle, ServiceName } from './service.ts';
export { onShutdownSignal, sleep } from './lifecycle.ts';
export { asFloeError, clientErrorHandler, clientErrorHandlerWith, validationError, type SchemaValidationFailure } from './http-errors.ts';
export { planningErrorReply, type PlanningErrorReply } from './planning-errors.ts';
export { headerValue } from './request-headers.ts';
export { snappyUncompress } from './snappy.ts';
export { gunzipWithin } from './gzip-within.ts';
export { crc32c } from './crc32c.ts';
export {
  CONNECT_CONTENT_TYPES,
  CONNECT_ERROR_SCHEMA,
  checkProtocolVersion,
  codecOf,
  connectError,
  deadlineMsOf,
  decodeMessage as decodeConnectMessage,
  decodedBody as decodedConnectBody,
  encodeMessage as encodeConnectMessage,
  encodedBody as encodedConnectBody,
  type ConnectCode,
  type ConnectCodec,
  type ConnectErrorReply,
} from './connect-protocol.ts';
export { MAX_JSON_BODY_DEPTH, parseJsonBody } from './json-body.ts';
