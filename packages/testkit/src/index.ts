/**
 * @floe/testkit: starts real Floe for tests in either mode (embedded: one process, PGlite and a
 * temp dir; cluster: five processes on PostgreSQL and an S3 server), with ephemeral ports, and
 * tears everything down afterwards. Nothing of Floe is mocked.
 */
export { startFloe, SERVICES } from './floe.ts';
export { makeTestAuthority, type TestAuthority } from './certificates.ts';
export type { ExtraProcess, FloeMode, FloeUnderTest, Service, StartOptions } from './floe.ts';
export { createTestDatabase, startTestS3, PG_ADMIN_URL } from './backends.ts';
export type { TestS3 } from './backends.ts';
export { WaitAborted, freePorts, onFreePorts, waitFor, isReady, listensOn } from './ports.ts';
export { emitLogRecords, grpcLogExporter, grpcTraceExporter, hrTimeOfNs, jsonLogExporter, protoLogExporter, protoTraceExporter, sendSampleLogs, sendSampleTrace, traceSpanCount } from './otel.ts';
export type { Credentials, SentLogRecord, SentLogs, SentTrace, TimedLogRecord } from './otel.ts';
export { grpcMetricExporter, jsonMetricExporter, protoMetricExporter, sendSampleMetrics } from './otel-metrics.ts';
export type { SentMetrics, Temporality } from './otel-metrics.ts';
export { SAMPLE_CPU_STACKS, SAMPLE_PROFILE_ID_HEX, postProfiles, profilesRequestJson, profilesRequestProtobuf, sampleProfilesRequest } from './otel-profiles.ts';
export type { ProfilesRequestInit } from './otel-profiles.ts';
export { PROMETHEUS_BIN, requirePrometheus, startPrometheus } from './prometheus.ts';
export type { PrometheusOptions, PrometheusUnderTest } from './prometheus.ts';
export { installFileFetch } from './file-fetch.ts';
export { plain } from './plain.ts';
export { goCpuPprof } from './pprof.ts';
export { comparePromAnswers } from './promql-compare.ts';
export { REMOTE_WRITE_HEADERS, STALE_PLACEHOLDER, promMetadata, remoteWriteMetadataBody, withStaleMarkers } from './remote-write.ts';
export type { MetricFamily } from './remote-write.ts';
export type { PromApiBody } from './promql-compare.ts';
export { runFloeCli, FLOE_BIN, NODE_BIN } from './cli.ts';
export { startFakeGitHub, startFakeGitHubApp } from './fake-github.ts';
export { signedInMember } from './sessions.ts';
export type { FakeEntry, FakeGitHub, FakeGitHubOptions, FakeInstallation, RecordedRequest } from './fake-github.ts';
export { ALERTMANAGER_DEFAULT_BIN, alertmanagerBin, requireAlertmanager, startAlertmanager } from './alertmanager.ts';
export type { AlertmanagerStartOptions, AlertmanagerUnderTest } from './alertmanager.ts';
export { decodeXorChunk, readStreamedFrames } from './prom-chunks.ts';
export type { ChunkSample, StreamedChunk, StreamedFrame, StreamedSeries } from './prom-chunks.ts';
export { hostPort, traceReadBack } from './trace-read-back.ts';
export { tenantSql, type SqlRow } from './tenant-sql.ts';
export { logsLedger } from './logs-ledger.ts';
export { stallingRelay, type StallingRelay } from '@floe/flight';
