import { Session } from 'node:inspector/promises';
import { ExportProfilesServiceRequestSchema, create, toBinary } from '@floe/proto';
import type { Logger } from 'pino';
import { cpuProfileToOtlp, type V8CpuProfile } from './cpu-profile.ts';
import { SERVICE_NAMESPACE } from './self-monitoring.ts';

/**
 * Self-profiling (spec 1 "Self-profiling"): the process samples its own CPU with V8's profiler
 * (node:inspector) and, every window, POSTs the window's profile to an acceptor's
 * /v1development/profiles as the self-monitoring tenant. Windows are back to back: the profiler is
 * stopped and started again at once, so only the moment in between is not sampled.
 *
 * Heap profiles: V8's sampling heap profiler (HeapProfiler.startSampling) would be available, but
 * the spec ties heap profiles to a build with a heap-profiling feature; this build has none, so
 * heap_profiles_enabled only logs a warning.
 */
export interface SelfProfilerOptions {
  serviceName: string;
  serviceVersion: string;
  instanceId: string;
  sampleRateHz: number;
  intervalMs: number;
  heapProfiles: boolean;
  /** The acceptor's OTLP/HTTP base URL (read at each export). */
  endpoint: () => string;
  headers: Readonly<Record<string, string>>;
  log: Logger;
}

export interface SelfProfiler {
  stop(): Promise<void>;
}

// The spec's value for every self-profile, so they are told apart from the services' own telemetry.
const PROFILE_ENVIRONMENT = 'self-monitoring';

export async function startSelfProfiler(o: SelfProfilerOptions): Promise<SelfProfiler> {
  if (o.heapProfiles) o.log.warn('self_monitoring.heap_profiles_enabled: this build has no heap-profiling feature; no heap profiles are exported');
  const session = new Session();
  session.connect();
  const intervalUs = Math.max(1, Math.round(1e6 / o.sampleRateHz));
  // What V8 is asked for; each sample stands for one such period of CPU time.
  const periodNs = BigInt(intervalUs) * 1000n;
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
  let windowStart = BigInt(Date.now()) * 1_000_000n;
  await session.post('Profiler.start');

  const exportWindow = async () => {
    const { profile } = await session.post('Profiler.stop');
    const start = windowStart;
    windowStart = BigInt(Date.now()) * 1_000_000n;
    await session.post('Profiler.start');
    const init = cpuProfileToOtlp(profile as V8CpuProfile, {
      resource: {
        'service.namespace': SERVICE_NAMESPACE,
        'service.name': o.serviceName,
        'service.version': o.serviceVersion,
        'service.instance.id': o.instanceId,
        'deployment.environment': PROFILE_ENVIRONMENT,
      },
      periodNs,
      startUnixNano: start,
      scope: { name: 'floe-self-profiler', version: o.serviceVersion },
    });
    const res = await fetch(`${o.endpoint()}/v1development/profiles`, {
      method: 'POST',
      headers: { ...o.headers, 'content-type': 'application/x-protobuf' },
      body: toBinary(ExportProfilesServiceRequestSchema, create(ExportProfilesServiceRequestSchema, init)),
      signal: AbortSignal.timeout(Math.min(o.intervalMs, 30_000)),
    });
    if (!res.ok) throw new Error(`acceptor answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
  };

  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    // While the last export is in flight the window goes on rather than queueing behind it.
    if (running) return;
    running = exportWindow()
      .catch((err: unknown) => o.log.warn({ err }, 'self-profiling: profile not exported'))
      .finally(() => (running = undefined));
  }, o.intervalMs);
  timer.unref();
  o.log.info({ service: o.serviceName, hz: o.sampleRateHz, intervalMs: o.intervalMs }, 'self-profiling started');
  return {
    async stop() {
      clearInterval(timer);
      await running;
      // The last partial window is dropped: the acceptor may already be stopping.
      await session.post('Profiler.stop').catch(() => undefined);
      session.disconnect();
    },
  };
}
