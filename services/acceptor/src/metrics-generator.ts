import type { TenantContext } from '@floe/auth';
import type { FloeConfig } from '@floe/config';
import type { TenantLimits } from '@floe/limits';
import { ExportMetricsServiceRequestSchema, Span_SpanKind, Status_StatusCode, create, type ExportMetricsServiceRequest, type ExportTraceServiceRequest, type KeyValue, type Span } from '@floe/proto';
import type { Logger } from '@floe/telemetry';
import type { AcceptedTimes } from './accepted-times.ts';
import { attributeText as attribute, serviceName, stringKeyValue, type KeyValueInit } from './attributes.ts';
import { hex } from './rows.ts';

/**
 * Tempo's metrics-generator in the acceptor: RED metrics and service-graph edges derived from the
 * spans a dataset ingests, written every `collection_interval` as ordinary OTLP metrics of that
 * dataset (through the same WAL as any export), under Tempo's names, so Grafana's Tempo data
 * source draws its service graph and RED table from Floe's metric API:
 *
 * - span_metrics: `traces_spanmetrics_calls_total` and the histogram `traces_spanmetrics_latency`
 *   (seconds) by service, span_name, span_kind (SPAN_KIND_…), status_code (STATUS_CODE_…) and the
 *   configured dimensions;
 * - service_graphs: `traces_service_graph_request_total`, `…_request_failed_total` and the
 *   histograms `…_request_client_seconds` and `…_request_server_seconds` by client, server and
 *   connection_type. A client (or producer) span and the server (or consumer) span whose parent it
 *   is make one edge; a server span without a parent is called by the virtual node `user`; a
 *   client span whose server never reports (within `service_graph_wait`) but that names its peer
 *   (`peer.service`, or `db.name`/`db.system` for a database) calls that peer as a virtual node;
 *   other halves left alone count in `traces_service_graph_unpaired_spans_total`.
 *
 * Counters are cumulative from when this acceptor first saw a series, in its memory: a restart
 * starts them again, which PromQL's rate() reads as a counter reset. Each acceptor labels its
 * series with its own instance (resource service.instance.id), so several acceptors never write
 * the same series. Series idle for 15 minutes are no longer written.
 */

type Config = FloeConfig['metrics_generator'];
type Processors = TenantLimits['metricsGeneratorProcessors'];

const SPAN_KINDS: Record<number, string> = {
  [Span_SpanKind.UNSPECIFIED]: 'SPAN_KIND_UNSPECIFIED',
  [Span_SpanKind.INTERNAL]: 'SPAN_KIND_INTERNAL',
  [Span_SpanKind.SERVER]: 'SPAN_KIND_SERVER',
  [Span_SpanKind.CLIENT]: 'SPAN_KIND_CLIENT',
  [Span_SpanKind.PRODUCER]: 'SPAN_KIND_PRODUCER',
  [Span_SpanKind.CONSUMER]: 'SPAN_KIND_CONSUMER',
};
const STATUS_CODES: Record<number, string> = {
  [Status_StatusCode.UNSET]: 'STATUS_CODE_UNSET',
  [Status_StatusCode.OK]: 'STATUS_CODE_OK',
  [Status_StatusCode.ERROR]: 'STATUS_CODE_ERROR',
};

/** Series not updated for this long are no longer written. */
const IDLE_SERIES_MS = 15 * 60_000;

class Histogram {
  count = 0;
  sum = 0;
  readonly buckets: number[];
  constructor(bounds: readonly number[]) {
    this.buckets = new Array<number>(bounds.length + 1).fill(0);
  }
  observe(bounds: readonly number[], seconds: number): void {
    this.count++;
    this.sum += seconds;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i++;
    this.buckets[i]!++;
  }
}

interface Series<S> {
  labels: Record<string, string>;
  startNs: bigint;
  lastMs: number;
  state: S;
}

/** Series by label set, at most `max` of them; spans of further new series only count as dropped. */
class SeriesTable<S> {
  readonly #series = new Map<string, Series<S>>();
  readonly #max: number;
  readonly #make: () => S;
  dropped = 0;

  constructor(max: number, make: () => S) {
    this.#max = max;
    this.#make = make;
  }

  get(labels: Record<string, string>, nowMs: number): S | undefined {
    const key = JSON.stringify(labels);
    let s = this.#series.get(key);
    if (!s) {
      if (this.#series.size >= this.#max) {
        this.dropped++;
        return undefined;
      }
      this.#series.set(key, (s = { labels, startNs: BigInt(nowMs) * 1_000_000n, lastMs: nowMs, state: this.#make() }));
    }
    s.lastMs = nowMs;
    return s.state;
  }

  /** The live series (idle ones forgotten). */
  live(nowMs: number): Array<Series<S>> {
    for (const [k, s] of this.#series) if (nowMs - s.lastMs > IDLE_SERIES_MS) this.#series.delete(k);
    return [...this.#series.values()];
  }
}

interface Edge {
  total: number;
  failed: number;
  client: Histogram;
  server: Histogram;
}

/** One half of an edge waiting for the other. */
interface Half {
  service: string;
  kind: Span_SpanKind;
  failed: boolean;
  seconds: number;
  /** The peer a client half names (peer.service, db.name, db.system), for a virtual node. */
  peer: { name: string; type: 'virtual_node' | 'database' } | undefined;
  expiresMs: number;
}

const durationSeconds = (s: Span) => (s.endTimeUnixNano > s.startTimeUnixNano ? Number(s.endTimeUnixNano - s.startTimeUnixNano) / 1e9 : 0);
const isCallerKind = (k: Span_SpanKind) => k === Span_SpanKind.CLIENT || k === Span_SpanKind.PRODUCER;
const isCalleeKind = (k: Span_SpanKind) => k === Span_SpanKind.SERVER || k === Span_SpanKind.CONSUMER;
const labelName = (key: string) => key.replace(/[^a-zA-Z0-9_]/g, '_');


/** What one dataset's spans have added up to. */
class DatasetGenerator {
  readonly #cfg: Config;
  /** Span metrics: calls and latency share their label sets. */
  readonly #spans: SeriesTable<{ calls: number; latency: Histogram }>;
  readonly #edges: SeriesTable<Edge>;
  /** Halves by trace id + the id of the caller span (a callee's parent). */
  readonly #pending = new Map<string, Half>();
  unpaired = 0;
  droppedHalves = 0;
  lastObservedMs = Date.now();
  readonly #startNs = BigInt(Date.now()) * 1_000_000n;

  constructor(cfg: Config) {
    this.#cfg = cfg;
    const bounds = cfg.histogram_buckets;
    this.#spans = new SeriesTable(cfg.max_series, () => ({ calls: 0, latency: new Histogram(bounds) }));
    this.#edges = new SeriesTable(cfg.max_series, () => ({ total: 0, failed: 0, client: new Histogram(bounds), server: new Histogram(bounds) }));
  }

  observe(service: string, resource: readonly KeyValue[], span: Span, processors: Processors, nowMs: number): void {
    this.lastObservedMs = nowMs;
    const failed = span.status?.code === Status_StatusCode.ERROR;
    const seconds = durationSeconds(span);
    if (processors.includes('span_metrics')) {
      const labels: Record<string, string> = {
        service,
        span_name: span.name,
        span_kind: SPAN_KINDS[span.kind] ?? 'SPAN_KIND_UNSPECIFIED',
        status_code: STATUS_CODES[span.status?.code ?? 0] ?? 'STATUS_CODE_UNSET',
      };
      for (const d of this.#cfg.dimensions) {
        const v = attribute(span.attributes, d) ?? attribute(resource, d);
        if (v !== undefined) labels[labelName(d)] = v;
      }
      const series = this.#spans.get(labels, nowMs);
      if (series) {
        series.calls++;
        series.latency.observe(this.#cfg.histogram_buckets, seconds);
      }
    }
    if (processors.includes('service_graphs')) this.#graph(service, span, failed, seconds, nowMs);
  }

  #graph(service: string, span: Span, failed: boolean, seconds: number, nowMs: number): void {
    const kind = span.kind;
    if (!isCallerKind(kind) && !isCalleeKind(kind)) return;
    if (isCalleeKind(kind) && span.parentSpanId.length === 0) {
      // A root server span: called by its users.
      this.#edge('user', service, 'virtual_node', failed, undefined, seconds, nowMs);
      return;
    }
    const key = hex(span.traceId) + (isCallerKind(kind) ? hex(span.spanId) : hex(span.parentSpanId));
    const other = this.#pending.get(key);
    if (other && isCallerKind(other.kind) !== isCallerKind(kind)) {
      this.#pending.delete(key);
      const [caller, callee] = isCallerKind(kind) ? [{ service, failed, seconds, kind }, other] : [other, { service, failed, seconds, kind }];
      const type = caller.kind === Span_SpanKind.PRODUCER ? 'messaging_system' : '';
      this.#edge(caller.service, callee.service, type, caller.failed || callee.failed, caller.seconds, callee.seconds, nowMs);
      return;
    }
    if (this.#pending.size >= this.#cfg.max_pending_edges) {
      this.droppedHalves++;
      return;
    }
    const peerService = attribute(span.attributes, 'peer.service');
    const db = attribute(span.attributes, 'db.name') ?? attribute(span.attributes, 'db.namespace') ?? attribute(span.attributes, 'db.system') ?? attribute(span.attributes, 'db.system.name');
    const peer = !isCallerKind(kind) ? undefined : db !== undefined ? { name: db, type: 'database' as const } : peerService !== undefined ? { name: peerService, type: 'virtual_node' as const } : undefined;
    this.#pending.set(key, { service, kind, failed, seconds, peer, expiresMs: nowMs + this.#cfg.service_graph_wait });
  }

  #edge(client: string, server: string, connectionType: string, failed: boolean, clientSeconds: number | undefined, serverSeconds: number | undefined, nowMs: number): void {
    // An empty label is no label (Prometheus): a direct call has no connection_type.
    const edge = this.#edges.get(connectionType === '' ? { client, server } : { client, server, connection_type: connectionType }, nowMs);
    if (!edge) return;
    edge.total++;
    if (failed) edge.failed++;
    const bounds = this.#cfg.histogram_buckets;
    if (clientSeconds !== undefined) edge.client.observe(bounds, clientSeconds);
    if (serverSeconds !== undefined) edge.server.observe(bounds, serverSeconds);
  }

  /** Halves whose wait is over: a client half naming its peer makes a virtual edge, the rest count as unpaired. */
  expire(nowMs: number): void {
    for (const [key, half] of this.#pending) {
      if (half.expiresMs > nowMs) continue;
      this.#pending.delete(key);
      if (half.peer) this.#edge(half.service, half.peer.name, half.peer.type, half.failed, half.seconds, undefined, nowMs);
      else this.unpaired++;
    }
  }

  /**
   * The dataset's series as one OTLP export, points at `nowMs`; undefined when there is nothing to
   * write, 'idle' when the dataset has had no spans for long and holds nothing any more.
   */
  collect(nowMs: number, resource: KeyValueInit[]): ExportMetricsServiceRequest | undefined | 'idle' {
    this.expire(nowMs);
    const timeUnixNano = BigInt(nowMs) * 1_000_000n;
    const attrs = (labels: Record<string, string>) => Object.entries(labels).map(([k, v]) => stringKeyValue(k, v));
    const bounds = this.#cfg.histogram_buckets;
    const sum = (name: string, points: Array<{ labels: Record<string, string>; startNs: bigint; n: number }>) => ({
      name,
      data: { case: 'sum' as const, value: { aggregationTemporality: 2, isMonotonic: true, dataPoints: points.map((p) => ({ attributes: attrs(p.labels), startTimeUnixNano: p.startNs, timeUnixNano, value: { case: 'asInt' as const, value: BigInt(p.n) } })) } },
    });
    const histogram = (name: string, points: Array<{ labels: Record<string, string>; startNs: bigint; h: Histogram }>) => ({
      name,
      data: {
        case: 'histogram' as const,
        value: {
          aggregationTemporality: 2,
          dataPoints: points.map((p) => ({ attributes: attrs(p.labels), startTimeUnixNano: p.startNs, timeUnixNano, count: BigInt(p.h.count), sum: p.h.sum, explicitBounds: [...bounds], bucketCounts: p.h.buckets.map(BigInt) })),
        },
      },
    });
    const metrics = [];
    const spans = this.#spans.live(nowMs);
    if (spans.length > 0) {
      metrics.push(sum('traces_spanmetrics_calls', spans.map((s) => ({ labels: s.labels, startNs: s.startNs, n: s.state.calls }))));
      metrics.push(histogram('traces_spanmetrics_latency', spans.map((s) => ({ labels: s.labels, startNs: s.startNs, h: s.state.latency }))));
    }
    const edges = this.#edges.live(nowMs);
    if (edges.length > 0) {
      metrics.push(sum('traces_service_graph_request', edges.map((s) => ({ labels: s.labels, startNs: s.startNs, n: s.state.total }))));
      metrics.push(sum('traces_service_graph_request_failed', edges.map((s) => ({ labels: s.labels, startNs: s.startNs, n: s.state.failed }))));
      metrics.push(histogram('traces_service_graph_request_client_seconds', edges.filter((s) => s.state.client.count > 0).map((s) => ({ labels: s.labels, startNs: s.startNs, h: s.state.client }))));
      metrics.push(histogram('traces_service_graph_request_server_seconds', edges.filter((s) => s.state.server.count > 0).map((s) => ({ labels: s.labels, startNs: s.startNs, h: s.state.server }))));
    }
    const totals: Array<[string, number]> = [
      ['traces_service_graph_unpaired_spans', this.unpaired],
      ['traces_service_graph_dropped_spans', this.droppedHalves + this.#edges.dropped],
      ['traces_spanmetrics_dropped_spans', this.#spans.dropped],
    ];
    for (const [name, n] of totals) if (n > 0) metrics.push(sum(name, [{ labels: {}, startNs: this.#startNs, n }]));
    if (spans.length === 0 && edges.length === 0 && this.#pending.size === 0 && nowMs - this.lastObservedMs > IDLE_SERIES_MS) return 'idle';
    if (metrics.length === 0) return undefined;
    return create(ExportMetricsServiceRequestSchema, { resourceMetrics: [{ resource: { attributes: resource }, scopeMetrics: [{ scope: { name: 'floe.metrics_generator' }, metrics }] }] });
  }

}

/** Writes one dataset's generated metrics (Ingest.metrics, durably through the WAL). */
export type WriteMetrics = (ctx: TenantContext, req: ExportMetricsServiceRequest) => Promise<unknown>;

export class MetricsGenerator {
  readonly #cfg: Config;
  readonly #instance: string;
  readonly #log: Logger;
  readonly #limitsOf: (tenant: string) => Promise<TenantLimits>;
  readonly #datasets = new Map<string, { tenant: string; dataset: string; gen: DatasetGenerator }>();
  #timer: NodeJS.Timeout | undefined;
  #collecting: Promise<void> | undefined;

  /** `limitsOf`: each tenant's limits, whose metrics_generator_processors say what to derive. */
  constructor(cfg: Config, instance: string, log: Logger, limitsOf: (tenant: string) => Promise<TenantLimits>) {
    this.#cfg = cfg;
    this.#instance = instance;
    this.#log = log.child({ component: 'metrics-generator' });
    this.#limitsOf = limitsOf;
  }

  /**
   * Counts the spans of an export that was stored (their times within what the tenant may write),
   * with the tenant's processors; `request` is only called when it has some.
   */
  async observe(ctx: TenantContext, request: () => ExportTraceServiceRequest, times: AcceptedTimes): Promise<void> {
    const processors = (await this.#limitsOf(ctx.tenant)).metricsGeneratorProcessors;
    if (processors.length === 0) return;
    const req = request();
    const key = `${ctx.tenant}\u0000${ctx.dataset}`;
    let entry = this.#datasets.get(key);
    if (!entry) this.#datasets.set(key, (entry = { tenant: ctx.tenant, dataset: ctx.dataset, gen: new DatasetGenerator(this.#cfg) }));
    const nowMs = Date.now();
    for (const rs of req.resourceSpans) {
      const resource = rs.resource?.attributes ?? [];
      const service = serviceName(resource);
      for (const ss of rs.scopeSpans) {
        for (const span of ss.spans) if (times.admits(Number(span.startTimeUnixNano))) entry.gen.observe(service, resource, span, processors, nowMs);
      }
    }
  }

  /** Writes every dataset's series every collection_interval with `write`. */
  start(write: WriteMetrics): void {
    this.#timer = setInterval(() => {
      this.#collecting ??= this.collect(write).finally(() => (this.#collecting = undefined));
    }, this.#cfg.collection_interval);
    this.#timer.unref();
  }

  /** One collection: each dataset's series written at once. */
  async collect(write: WriteMetrics): Promise<void> {
    const nowMs = Date.now();
    const resource = [stringKeyValue('service.name', 'floe-metrics-generator'), stringKeyValue('service.instance.id', this.#instance)];
    for (const [key, { tenant, dataset, gen }] of this.#datasets) {
      const req = gen.collect(nowMs, resource);
      if (req === 'idle') this.#datasets.delete(key);
      if (req === undefined || req === 'idle') continue;
      const ctx: TenantContext = { tenant, dataset, principal: 'metrics-generator', scopes: ['ingest'], isAdmin: false };
      await write(ctx, req).catch((err: unknown) => this.#log.warn({ err, tenant, dataset }, 'generated metrics not written; the next collection writes them'));
    }
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await this.#collecting;
  }
}
