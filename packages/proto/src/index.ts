// Public surface of @floe/proto. Several upstream packages reuse message names (Span, Sample,
// Histogram, Exemplar, ...): OTLP keeps the bare names, everything else carries a prefix
// (Tempo*, Prom*, RwV2*, Flight*, Profile*, Pyro*). README.md lists the mapping.

// protobuf-es runtime, so callers need not depend on @bufbuild/protobuf themselves.
export {
  clone,
  create,
  equals,
  fromBinary,
  fromJson,
  fromJsonString,
  isMessage,
  protoInt64,
  toBinary,
  toJson,
  toJsonString,
} from '@bufbuild/protobuf';
export type {
  DescMessage,
  DescMethod,
  DescService,
  JsonValue,
  Message,
  MessageInitShape,
  MessageShape,
} from '@bufbuild/protobuf';
export type { GenMessage, GenService } from '@bufbuild/protobuf/codegenv2';
// google.protobuf.Any, which carries Flight SQL's commands.
export { AnySchema, anyIs, anyPack, anyUnpack } from '@bufbuild/protobuf/wkt';
export type { Any } from '@bufbuild/protobuf/wkt';
// The wire layer, for the few hot paths that walk or write protobuf bytes without messages.
export { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';

export { grpcServiceDefinition } from './grpc.ts';
export { decodeOtlpJson, hexIdsToBase64 } from './otlp-json.ts';
export { pprofOfNamedStacks, type NamedStackProfile } from './pprof.ts';

// OTLP common + resource
export {
  AnyValueSchema,
  ArrayValueSchema,
  EntityRefSchema,
  InstrumentationScopeSchema,
  KeyValueListSchema,
  KeyValueSchema,
} from './gen/opentelemetry/proto/common/v1/common_pb.js';
export type {
  AnyValue,
  ArrayValue,
  EntityRef,
  InstrumentationScope,
  KeyValue,
  KeyValueList,
} from './gen/opentelemetry/proto/common/v1/common_pb.js';
export { ResourceSchema } from './gen/opentelemetry/proto/resource/v1/resource_pb.js';
export type { Resource } from './gen/opentelemetry/proto/resource/v1/resource_pb.js';

// OTLP traces
export {
  ResourceSpansSchema,
  ScopeSpansSchema,
  Span_EventSchema,
  Span_LinkSchema,
  Span_SpanKind,
  SpanFlags,
  SpanSchema,
  Status_StatusCode,
  StatusSchema,
  TracesDataSchema,
} from './gen/opentelemetry/proto/trace/v1/trace_pb.js';
export type {
  ResourceSpans,
  ScopeSpans,
  Span,
  Span_Event,
  Span_Link,
  Status,
  TracesData,
} from './gen/opentelemetry/proto/trace/v1/trace_pb.js';
export {
  ExportTracePartialSuccessSchema,
  ExportTraceServiceRequestSchema,
  ExportTraceServiceResponseSchema,
  TraceService,
} from './gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js';
export type {
  ExportTracePartialSuccess,
  ExportTraceServiceRequest,
  ExportTraceServiceResponse,
} from './gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js';

// OTLP logs
export {
  LogRecordFlags,
  LogRecordSchema,
  LogsDataSchema,
  ResourceLogsSchema,
  ScopeLogsSchema,
  SeverityNumber,
} from './gen/opentelemetry/proto/logs/v1/logs_pb.js';
export type { LogRecord, LogsData, ResourceLogs, ScopeLogs } from './gen/opentelemetry/proto/logs/v1/logs_pb.js';
export {
  ExportLogsPartialSuccessSchema,
  ExportLogsServiceRequestSchema,
  ExportLogsServiceResponseSchema,
  LogsService,
} from './gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js';
export type {
  ExportLogsPartialSuccess,
  ExportLogsServiceRequest,
  ExportLogsServiceResponse,
} from './gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js';

// OTLP metrics
export {
  AggregationTemporality,
  DataPointFlags,
  ExemplarSchema,
  ExponentialHistogramDataPoint_BucketsSchema,
  ExponentialHistogramDataPointSchema,
  ExponentialHistogramSchema,
  GaugeSchema,
  HistogramDataPointSchema,
  HistogramSchema,
  MetricSchema,
  MetricsDataSchema,
  NumberDataPointSchema,
  ResourceMetricsSchema,
  ScopeMetricsSchema,
  SummaryDataPoint_ValueAtQuantileSchema,
  SummaryDataPointSchema,
  SummarySchema,
  SumSchema,
} from './gen/opentelemetry/proto/metrics/v1/metrics_pb.js';
export type {
  Exemplar,
  ExponentialHistogram,
  ExponentialHistogramDataPoint,
  ExponentialHistogramDataPoint_Buckets,
  Gauge,
  Histogram,
  HistogramDataPoint,
  Metric,
  MetricsData,
  NumberDataPoint,
  ResourceMetrics,
  ScopeMetrics,
  Sum,
  Summary,
  SummaryDataPoint,
  SummaryDataPoint_ValueAtQuantile,
} from './gen/opentelemetry/proto/metrics/v1/metrics_pb.js';
export {
  ExportMetricsPartialSuccessSchema,
  ExportMetricsServiceRequestSchema,
  ExportMetricsServiceResponseSchema,
  MetricsService,
} from './gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js';
export type {
  ExportMetricsPartialSuccess,
  ExportMetricsServiceRequest,
  ExportMetricsServiceResponse,
} from './gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js';

// OTLP profiles (v1development, v1.10 wire layout)
export {
  FunctionSchema as ProfileFunctionSchema,
  KeyValueAndUnitSchema,
  LineSchema as ProfileLineSchema,
  LinkSchema as ProfileLinkSchema,
  LocationSchema as ProfileLocationSchema,
  MappingSchema as ProfileMappingSchema,
  ProfileSchema,
  ProfilesDataSchema,
  ProfilesDictionarySchema,
  ResourceProfilesSchema,
  SampleSchema as ProfileSampleSchema,
  ScopeProfilesSchema,
  StackSchema as ProfileStackSchema,
  ValueTypeSchema as ProfileValueTypeSchema,
} from './gen/opentelemetry/proto/profiles/v1development/profiles_pb.js';
export type {
  Function as ProfileFunction,
  KeyValueAndUnit,
  Line as ProfileLine,
  Link as ProfileLink,
  Location as ProfileLocation,
  Mapping as ProfileMapping,
  Profile,
  ProfilesData,
  ProfilesDictionary,
  ResourceProfiles,
  Sample as ProfileSample,
  ScopeProfiles,
  Stack as ProfileStack,
  ValueType as ProfileValueType,
} from './gen/opentelemetry/proto/profiles/v1development/profiles_pb.js';
export {
  ExportProfilesPartialSuccessSchema,
  ExportProfilesServiceRequestSchema,
  ExportProfilesServiceResponseSchema,
  ProfilesService,
} from './gen/opentelemetry/proto/collector/profiles/v1development/profiles_service_pb.js';
export type {
  ExportProfilesPartialSuccess,
  ExportProfilesServiceRequest,
  ExportProfilesServiceResponse,
} from './gen/opentelemetry/proto/collector/profiles/v1development/profiles_service_pb.js';

// Prometheus remote write 1.0 and remote read (package prometheus)
export {
  BucketSpanSchema as PromBucketSpanSchema,
  ExemplarSchema as PromExemplarSchema,
  Histogram_ResetHint as PromHistogram_ResetHint,
  HistogramSchema as PromHistogramSchema,
  LabelMatcher_Type as PromLabelMatcher_Type,
  LabelMatcherSchema as PromLabelMatcherSchema,
  LabelSchema as PromLabelSchema,
  MetricMetadata_MetricType as PromMetricMetadata_MetricType,
  MetricMetadataSchema as PromMetricMetadataSchema,
  SampleSchema as PromSampleSchema,
  TimeSeriesSchema as PromTimeSeriesSchema,
} from './gen/prometheus/types_pb.js';
export type {
  BucketSpan as PromBucketSpan,
  Exemplar as PromExemplar,
  Histogram as PromHistogram,
  Label as PromLabel,
  MetricMetadata as PromMetricMetadata,
  Sample as PromSample,
  TimeSeries as PromTimeSeries,
} from './gen/prometheus/types_pb.js';
export {
  QueryResultSchema as PromQueryResultSchema,
  QuerySchema as PromQuerySchema,
  ReadRequest_ResponseType as PromReadRequest_ResponseType,
  ReadRequestSchema as PromReadRequestSchema,
  ReadResponseSchema as PromReadResponseSchema,
  WriteRequestSchema as PromWriteRequestSchema,
} from './gen/prometheus/remote_pb.js';
export type { ReadRequest as PromReadRequest, ReadResponse as PromReadResponse, WriteRequest as PromWriteRequest } from './gen/prometheus/remote_pb.js';

// Prometheus remote write 2.0 (package io.prometheus.write.v2)
export {
  BucketSpanSchema as RwV2BucketSpanSchema,
  ExemplarSchema as RwV2ExemplarSchema,
  Histogram_ResetHint as RwV2Histogram_ResetHint,
  HistogramSchema as RwV2HistogramSchema,
  Metadata_MetricType as RwV2Metadata_MetricType,
  MetadataSchema as RwV2MetadataSchema,
  RequestSchema as RwV2RequestSchema,
  SampleSchema as RwV2SampleSchema,
  TimeSeriesSchema as RwV2TimeSeriesSchema,
} from './gen/io/prometheus/write/v2/types_pb.js';
export type {
  BucketSpan as RwV2BucketSpan,
  Exemplar as RwV2Exemplar,
  Histogram as RwV2Histogram,
  Metadata as RwV2Metadata,
  Request as RwV2Request,
  Sample as RwV2Sample,
  TimeSeries as RwV2TimeSeries,
} from './gen/io/prometheus/write/v2/types_pb.js';

// Arrow Flight (package arrow.flight.protocol)
export {
  ActionSchema as FlightActionSchema,
  ActionTypeSchema as FlightActionTypeSchema,
  BasicAuthSchema as FlightBasicAuthSchema,
  CancelFlightInfoRequestSchema,
  CancelFlightInfoResultSchema,
  CancelStatus as FlightCancelStatus,
  CriteriaSchema as FlightCriteriaSchema,
  EmptySchema as FlightEmptySchema,
  FlightDataSchema,
  FlightDescriptor_DescriptorType,
  FlightDescriptorSchema,
  FlightEndpointSchema,
  FlightInfoSchema,
  FlightService,
  HandshakeRequestSchema as FlightHandshakeRequestSchema,
  HandshakeResponseSchema as FlightHandshakeResponseSchema,
  LocationSchema as FlightLocationSchema,
  PollInfoSchema as FlightPollInfoSchema,
  PutResultSchema as FlightPutResultSchema,
  RenewFlightEndpointRequestSchema,
  ResultSchema as FlightResultSchema,
  SchemaResultSchema as FlightSchemaResultSchema,
  TicketSchema as FlightTicketSchema,
} from './gen/arrow/flight/protocol/flight_pb.js';
export type {
  Action as FlightAction,
  ActionType as FlightActionType,
  BasicAuth as FlightBasicAuth,
  CancelFlightInfoRequest,
  CancelFlightInfoResult,
  Criteria as FlightCriteria,
  Empty as FlightEmpty,
  FlightData,
  FlightDescriptor,
  FlightEndpoint,
  FlightInfo,
  HandshakeRequest as FlightHandshakeRequest,
  HandshakeResponse as FlightHandshakeResponse,
  Location as FlightLocation,
  PollInfo as FlightPollInfo,
  PutResult as FlightPutResult,
  RenewFlightEndpointRequest,
  Result as FlightResult,
  SchemaResult as FlightSchemaResult,
  Ticket as FlightTicket,
} from './gen/arrow/flight/protocol/flight_pb.js';

// Tempo internal query protocol (package tempopb)
export {
  DedicatedColumn_Option as TempoDedicatedColumn_Option,
  DedicatedColumn_Scope as TempoDedicatedColumn_Scope,
  DedicatedColumn_Type as TempoDedicatedColumn_Type,
  DedicatedColumnSchema as TempoDedicatedColumnSchema,
  MetadataMetricsSchema as TempoMetadataMetricsSchema,
  PartialStatus as TempoPartialStatus,
  Querier,
  StreamingQuerier as TempoStreamingQuerier,
  SearchBlockRequestSchema as TempoSearchBlockRequestSchema,
  SearchMetricsSchema as TempoSearchMetricsSchema,
  SearchRequestSchema as TempoSearchRequestSchema,
  SearchResponseSchema as TempoSearchResponseSchema,
  SearchTagsRequestSchema as TempoSearchTagsRequestSchema,
  SearchTagsResponseSchema as TempoSearchTagsResponseSchema,
  SearchTagsV2ResponseSchema as TempoSearchTagsV2ResponseSchema,
  SearchTagsV2ScopeSchema as TempoSearchTagsV2ScopeSchema,
  SearchTagValuesRequestSchema as TempoSearchTagValuesRequestSchema,
  SearchTagValuesResponseSchema as TempoSearchTagValuesResponseSchema,
  SearchTagValuesV2ResponseSchema as TempoSearchTagValuesV2ResponseSchema,
  ServiceStatsSchema as TempoServiceStatsSchema,
  SpanSchema as TempoSpanSchema,
  SpanSetSchema as TempoSpanSetSchema,
  TagValueSchema as TempoTagValueSchema,
  TraceByIDMetricsSchema as TempoTraceByIDMetricsSchema,
  TraceByIDRequestSchema as TempoTraceByIDRequestSchema,
  TraceByIDResponseSchema as TempoTraceByIDResponseSchema,
  TraceSchema as TempoTraceSchema,
  TraceSearchMetadataSchema as TempoTraceSearchMetadataSchema,
} from './gen/tempopb/tempo_pb.js';
export type {
  DedicatedColumn as TempoDedicatedColumn,
  MetadataMetrics as TempoMetadataMetrics,
  SearchBlockRequest as TempoSearchBlockRequest,
  SearchMetrics as TempoSearchMetrics,
  SearchRequest as TempoSearchRequest,
  SearchResponse as TempoSearchResponse,
  SearchTagsRequest as TempoSearchTagsRequest,
  SearchTagsResponse as TempoSearchTagsResponse,
  SearchTagsV2Response as TempoSearchTagsV2Response,
  SearchTagsV2Scope as TempoSearchTagsV2Scope,
  SearchTagValuesRequest as TempoSearchTagValuesRequest,
  SearchTagValuesResponse as TempoSearchTagValuesResponse,
  SearchTagValuesV2Response as TempoSearchTagValuesV2Response,
  ServiceStats as TempoServiceStats,
  Span as TempoSpan,
  SpanSet as TempoSpanSet,
  TagValue as TempoTagValue,
  TraceByIDMetrics as TempoTraceByIDMetrics,
  TraceByIDRequest as TempoTraceByIDRequest,
  TraceByIDResponse as TempoTraceByIDResponse,
  Trace as TempoTrace,
  TraceSearchMetadata as TempoTraceSearchMetadata,
} from './gen/tempopb/tempo_pb.js';

// Pyroscope's Connect query API (packages querier.v1 and types.v1)
export {
  DiffRequestSchema as PyroDiffRequestSchema,
  DiffResponseSchema as PyroDiffResponseSchema,
  FlameGraphDiffSchema as PyroFlameGraphDiffSchema,
  FlameGraphSchema as PyroFlameGraphSchema,
  LevelSchema as PyroLevelSchema,
  ProfileFormat as PyroProfileFormat,
  ProfileTypesRequestSchema as PyroProfileTypesRequestSchema,
  ProfileTypesResponseSchema as PyroProfileTypesResponseSchema,
  QuerierService as PyroQuerierService,
  SelectMergeSpanProfileRequestSchema as PyroSelectMergeSpanProfileRequestSchema,
  SelectMergeSpanProfileResponseSchema as PyroSelectMergeSpanProfileResponseSchema,
  SelectMergeProfileRequestSchema as PyroSelectMergeProfileRequestSchema,
  SelectMergeStacktracesRequestSchema as PyroSelectMergeStacktracesRequestSchema,
  SelectMergeStacktracesResponseSchema as PyroSelectMergeStacktracesResponseSchema,
  SelectSeriesRequestSchema as PyroSelectSeriesRequestSchema,
  SelectSeriesResponseSchema as PyroSelectSeriesResponseSchema,
  SeriesRequestSchema as PyroSeriesRequestSchema,
  SeriesResponseSchema as PyroSeriesResponseSchema,
} from './gen/pyroscope/querier/v1/querier_pb.js';
export type {
  DiffRequest as PyroDiffRequest,
  DiffResponse as PyroDiffResponse,
  FlameGraph as PyroFlameGraph,
  FlameGraphDiff as PyroFlameGraphDiff,
  Level as PyroLevel,
  ProfileTypesRequest as PyroProfileTypesRequest,
  ProfileTypesResponse as PyroProfileTypesResponse,
  SelectMergeSpanProfileRequest as PyroSelectMergeSpanProfileRequest,
  SelectMergeSpanProfileResponse as PyroSelectMergeSpanProfileResponse,
  SelectMergeProfileRequest as PyroSelectMergeProfileRequest,
  SelectMergeStacktracesRequest as PyroSelectMergeStacktracesRequest,
  SelectMergeStacktracesResponse as PyroSelectMergeStacktracesResponse,
  SelectSeriesRequest as PyroSelectSeriesRequest,
  SelectSeriesResponse as PyroSelectSeriesResponse,
  SeriesRequest as PyroSeriesRequest,
  SeriesResponse as PyroSeriesResponse,
} from './gen/pyroscope/querier/v1/querier_pb.js';
export {
  ExemplarSchema as PyroExemplarSchema,
  ExemplarType as PyroExemplarType,
  GetProfileStatsRequestSchema as PyroGetProfileStatsRequestSchema,
  GetProfileStatsResponseSchema as PyroGetProfileStatsResponseSchema,
  LabelNamesRequestSchema as PyroLabelNamesRequestSchema,
  LabelNamesResponseSchema as PyroLabelNamesResponseSchema,
  LabelPairSchema as PyroLabelPairSchema,
  LabelsSchema as PyroLabelsSchema,
  LabelValuesRequestSchema as PyroLabelValuesRequestSchema,
  LabelValuesResponseSchema as PyroLabelValuesResponseSchema,
  PointSchema as PyroPointSchema,
  ProfileTypeSchema as PyroProfileTypeSchema,
  SeriesSchema as PyroSeriesSchema,
  StackTraceSelectorSchema as PyroStackTraceSelectorSchema,
  TimeSeriesAggregationType as PyroTimeSeriesAggregationType,
} from './gen/pyroscope/types/v1/types_pb.js';
export type {
  Exemplar as PyroExemplar,
  StackTraceSelector as PyroStackTraceSelector,
  GetProfileStatsRequest as PyroGetProfileStatsRequest,
  GetProfileStatsResponse as PyroGetProfileStatsResponse,
  LabelNamesRequest as PyroLabelNamesRequest,
  LabelNamesResponse as PyroLabelNamesResponse,
  LabelPair as PyroLabelPair,
  Labels as PyroLabels,
  LabelValuesRequest as PyroLabelValuesRequest,
  LabelValuesResponse as PyroLabelValuesResponse,
  Point as PyroPoint,
  ProfileType as PyroProfileType,
  Series as PyroSeries,
} from './gen/pyroscope/types/v1/types_pb.js';

// Loki's push API body (POST /loki/api/v1/push).
export { PushRequestSchema as LokiPushRequestSchema, StreamAdapterSchema as LokiStreamAdapterSchema, EntryAdapterSchema as LokiEntryAdapterSchema } from './gen/logproto/push_pb.js';
export type { PushRequest as LokiPushRequest, StreamAdapter as LokiStreamAdapter, EntryAdapter as LokiEntryAdapter } from './gen/logproto/push_pb.js';

// Pyroscope's push API (POST /push.v1.PusherService/Push) and the pprof profiles it carries.
export { PusherService as PyroPusherService, PushRequestSchema as PyroPushRequestSchema, PushResponseSchema as PyroPushResponseSchema } from './gen/push/v1/push_pb.js';
export type { PushRequest as PyroPushRequest, RawProfileSeries as PyroRawProfileSeries } from './gen/push/v1/push_pb.js';
export { LabelsSnapshotSchema as JfrLabelsSnapshotSchema } from './gen/pyroscope/jfr/labels_pb.js';
export { ProfileSchema as PprofProfileSchema } from './gen/perftools/profiles/profile_pb.js';
export type { Profile as PprofProfile } from './gen/perftools/profiles/profile_pb.js';

// Arrow Flight SQL's commands (the querier's SQL-client surface).
export {
  ActionClosePreparedStatementRequestSchema as FlightSqlClosePreparedStatementSchema,
  ActionCreatePreparedStatementRequestSchema as FlightSqlCreatePreparedStatementSchema,
  ActionCreatePreparedStatementResultSchema as FlightSqlPreparedStatementResultSchema,
  CommandPreparedStatementQuerySchema as FlightSqlPreparedStatementQuerySchema,
  CommandGetCatalogsSchema as FlightSqlGetCatalogsSchema,
  CommandGetSqlInfoSchema as FlightSqlGetSqlInfoSchema,
  CommandGetXdbcTypeInfoSchema as FlightSqlGetXdbcTypeInfoSchema,
  CommandGetDbSchemasSchema as FlightSqlGetDbSchemasSchema,
  CommandGetTablesSchema as FlightSqlGetTablesSchema,
  CommandGetTableTypesSchema as FlightSqlGetTableTypesSchema,
  CommandStatementQuerySchema as FlightSqlStatementQuerySchema,
  DoPutPreparedStatementResultSchema as FlightSqlDoPutPreparedStatementResultSchema,
  TicketStatementQuerySchema as FlightSqlTicketStatementQuerySchema,
} from './gen/arrow/flight/protocol/sql/flight_sql_pb.js';
export { otelLabelName, otelPromName } from './prometheus-names.ts';
