import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { FloeConfig } from '@floe/config';
import { MONITORING_DATASET_ID, SYSTEM_TENANT_ID, createDataset, ensureTenant, isMetaError, type Db } from '@floe/meta';
import { SERVICE_NAMES, localUrl } from '@floe/runtime';
import { noSelfTelemetry, startSelfMonitoring, startSelfProfiler, type Logger, type SelfMonitoring, type SelfProfiler, type SelfTelemetry } from '@floe/telemetry';

/**
 * Self-monitoring of one Floe process (spec 2 "Events", spec 1 "Self-profiling"): the SDK starts
 * before the services, which take their tracer and meter from it; once they run, the _system
 * tenant and its _monitoring dataset are provisioned and the CPU profiler starts. Both export to
 * self_monitoring.endpoint, else this process's acceptor, else the acceptor port of the config
 * on this host (a split deployment should name its acceptors' address).
 *
 * The same meter is served at `GET /metrics` of the process's services (self_monitoring.metrics_endpoint,
 * on by default), whether or not it is also exported.
 *
 * The profiling section sends the same CPU profiles to an external backend instead (it needs no
 * admin key, the backend's credentials are its headers); with both on, only that one runs.
 */
export interface ProcessSelfMonitoring {
  readonly telemetry: SelfTelemetry;
  /** After the services started: provisioning (best effort) and the profiler. */
  afterStart(db: Db | undefined): Promise<void>;
  /** Before the services stop, so the last export still reaches the acceptor. */
  stop(): Promise<void>;
}

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** One service's own name; several services in one process share the monolithic name. */
export function selfServiceName(targets: readonly string[]): string {
  return targets.length === 1 && (SERVICE_NAMES as readonly string[]).includes(targets[0]!) ? targets[0]! : 'floe';
}

export async function startProcessSelfMonitoring(
  config: Readonly<FloeConfig>,
  targets: readonly string[],
  log: Logger,
  ownAcceptorUrl: () => string | undefined,
): Promise<ProcessSelfMonitoring> {
  const sm = config.self_monitoring;
  const external = config.profiling;
  if (!sm.enabled && !sm.metrics_endpoint && !sm.profiles_enabled && !external.enabled) return { telemetry: noSelfTelemetry, afterStart: async () => {}, stop: async () => {} };
  const serviceName = selfServiceName(targets);
  const instanceId = config.runtime.instance_id || `${hostname()}-${process.pid}`;
  // A process that runs an acceptor sends to it once it listens (its port may be 0 in the config
  // until then); any other one to the configured acceptor port on this host.
  const runsAcceptor = targets.includes('all') || targets.includes('acceptor');
  const endpoint = () => (sm.endpoint || ownAcceptorUrl() || (runsAcceptor ? undefined : localUrl(config, config.acceptor.http_port)))?.replace(/\/+$/, '');
  // The break-glass key is the one credential that may write tenant _system (config validation
  // requires it whenever self-monitoring is on).
  const headers = { authorization: `Bearer ${config.auth.admin_api_key}`, 'x-tenant-id': SYSTEM_TENANT_ID, 'x-dataset-id': MONITORING_DATASET_ID };
  const smLog = log.child({ component: 'self-monitoring' });
  const selfProfiles = sm.profiles_enabled && !external.enabled;
  // Spec 1 "Self-profiling": the external profiling section wins. Either way one profiler runs,
  // differing only in where it sends and how often it samples.
  const profiling = external.enabled
    ? {
        sampleRateHz: external.sample_rate_hz,
        intervalMs: external.interval,
        heapProfiles: false,
        endpoint: () => external.endpoint.replace(/\/+$/, ''),
        headers: external.headers,
        log: log.child({ component: 'profiling' }),
      }
    : selfProfiles
      ? { sampleRateHz: sm.profile_sample_rate_hz, intervalMs: sm.profile_interval, heapProfiles: sm.heap_profiles_enabled, endpoint: () => endpoint() ?? '', headers, log: smLog }
      : undefined;
  if (sm.profiles_enabled && external.enabled) {
    profiling!.log.warn(
      { endpoint: external.endpoint },
      'self_monitoring.profiles_enabled is ignored because profiling.enabled is on: CPU profiles go to profiling.endpoint, none are stored under tenant _system',
    );
  }
  const monitoring: SelfMonitoring | undefined =
    sm.enabled || sm.metrics_endpoint
      ? await startSelfMonitoring({
          serviceName,
          serviceVersion: VERSION,
          instanceId,
          environment: sm.environment,
          ...(sm.enabled ? { export: { endpoint, headers, exportIntervalMs: sm.export_interval } } : {}),
          ...(sm.metrics_endpoint ? { metricsEndpoint: { bearerToken: sm.metrics_bearer_token } } : {}),
          log: smLog,
        })
      : undefined;
  let profiler: SelfProfiler | undefined;
  return {
    telemetry: monitoring ?? noSelfTelemetry,
    async afterStart(db) {
      // Tenant _system only when something writes to it.
      if (db && (sm.enabled || selfProfiles)) await provisionSystemDataset(db, smLog);
      if (profiling) profiler = await startSelfProfiler({ serviceName, serviceVersion: VERSION, instanceId, ...profiling });
    },
    async stop() {
      await profiler?.stop();
      await monitoring?.shutdown();
    },
  };
}

/** The tenant and dataset the telemetry is stored in; a failure is logged, never fatal. */
async function provisionSystemDataset(db: Db, log: Logger): Promise<void> {
  try {
    await ensureTenant(db, { id: SYSTEM_TENANT_ID });
    await createDataset(db, { tenantId: SYSTEM_TENANT_ID, id: MONITORING_DATASET_ID }).catch((err: unknown) => {
      if (!(isMetaError(err) && err.kind === 'conflict')) throw err;
    });
  } catch (err) {
    log.warn({ err }, `self-monitoring: tenant ${SYSTEM_TENANT_ID} / dataset ${MONITORING_DATASET_ID} not provisioned; telemetry may be refused`);
  }
}
