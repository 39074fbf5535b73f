import { Session } from 'node:inspector/promises';
import { ExportProfilesServiceRequestSchema, create, toBinary } from '@floe/proto';
import type { Logger } from 'pino';
import { addCpuProfile, type V8CpuProfile } from './cpu-profile.ts';
import { addHeapProfile, type V8SamplingHeapProfile } from './heap-profile.ts';
import { OtlpProfileBuilder } from './otlp-profile.ts';
import { SERVICE_NAMESPACE } from './self-monitoring.ts';

/**
 * Self-profiling (spec 1 "Self-profiling"): the process samples its own CPU with V8's profiler
 * (node:inspector) and, every window, POSTs the window's profile to an acceptor's
 * /v1development/profiles as the self-monitoring tenant. Windows are back to back: the profiler is
 * stopped and started again at once, so only the moment in between is not sampled.
 *
 * Heap profiles (heapProfiles, self_monitoring.heap_profiles_enabled): the spec asks for a build
 * with a heap-profiling feature and the allocator's sampling profiler enabled by environment. On
 * Node that sampler is V8's sampling heap profiler (HeapProfiler.startSampling), part of every
 * build and switched on at run time through the inspector, so the feature is always there and the
 * setting itself is the switch: no environment variable is read (there is no allocator to
 * configure, unlike jemalloc's MALLOC_CONF=prof:true). Sampling starts with the profiler, one
 * sample per HEAP_SAMPLING_INTERVAL_BYTES allocated on average, and runs until it stops; each
 * window's request carries, besides the CPU profile, a snapshot of the sampled allocations still
 * alive (heap-profile.ts: inuse_space in bytes, allocated any time since sampling started). Only
 * when the sampler cannot be started is a warning logged and no heap profile exported.
 *
 * V8 has one sampling heap profiler per isolate, which a session stopping it or disconnecting
 * stops for everyone; so the profilers of a process (tests run several Floe instances in one) share
 * one inspector session for it, started by the first and stopped by the last (acquireHeapSampler).
 * Someone else's sampling in the same process (node --heap-prof, a debugger) is not coordinated
 * with: its interval then applies, and the last profiler's stop ends it.
 */

/** Bytes allocated per heap sample, on average: V8's default and Go's MemProfileRate. */
export const HEAP_SAMPLING_INTERVAL_BYTES = 512 * 1024;

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
  let heap: HeapSampler | undefined;
  if (o.heapProfiles) {
    heap = await acquireHeapSampler().catch((err: unknown) => {
      o.log.warn({ err }, "self_monitoring.heap_profiles_enabled: V8's sampling heap profiler could not be started; no heap profiles are exported");
      return undefined;
    });
  }
  const session = new Session();
  session.connect();
  const intervalUs = Math.max(1, Math.round(1e6 / o.sampleRateHz));
  // What V8 is asked for; each sample stands for one such period of CPU time.
  const periodNs = BigInt(intervalUs) * 1000n;
  let windowStart: bigint;
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
    windowStart = BigInt(Date.now()) * 1_000_000n;
    await session.post('Profiler.start');
  } catch (err) {
    session.disconnect();
    await heap?.release();
    throw err;
  }

  const exportWindow = async () => {
    const { profile } = await session.post('Profiler.stop');
    const start = windowStart;
    windowStart = BigInt(Date.now()) * 1_000_000n;
    await session.post('Profiler.start');
    // One request per window: the CPU profile and, when on, the heap snapshot, on one dictionary.
    const builder = new OtlpProfileBuilder();
    addCpuProfile(builder, profile as V8CpuProfile, { periodNs, startUnixNano: start });
    if (heap) {
      // A heap profile not taken costs only itself: the window's CPU profile is still sent.
      const taken = await heap.profile().then(
        (p) => ({ profile: p, at: BigInt(Date.now()) * 1_000_000n }),
        (err: unknown) => void o.log.warn({ err }, 'self-profiling: heap profile not taken'),
      );
      if (taken) addHeapProfile(builder, taken.profile, { samplingIntervalBytes: HEAP_SAMPLING_INTERVAL_BYTES, timeUnixNano: taken.at });
    }
    const init = builder.request({
      resource: {
        'service.namespace': SERVICE_NAMESPACE,
        'service.name': o.serviceName,
        'service.version': o.serviceVersion,
        'service.instance.id': o.instanceId,
        'deployment.environment': PROFILE_ENVIRONMENT,
      },
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
  o.log.info(
    { service: o.serviceName, hz: o.sampleRateHz, intervalMs: o.intervalMs, ...(heap ? { heapSamplingIntervalBytes: HEAP_SAMPLING_INTERVAL_BYTES } : {}) },
    'self-profiling started',
  );
  return {
    async stop() {
      clearInterval(timer);
      await running;
      // The last partial window is dropped: the acceptor may already be stopping.
      await session.post('Profiler.stop').catch(() => undefined);
      session.disconnect();
      await heap?.release();
    },
  };
}

interface HeapSampler {
  /** The sampled allocations alive now. */
  profile(): Promise<V8SamplingHeapProfile>;
  /** Once per acquire; the last release stops the sampling. */
  release(): Promise<void>;
}

/** The process's heap sampling: one session, started by the first profiler, stopped by the last. */
interface HeapSampling {
  session: Session;
  /** Profilers holding it. */
  users: number;
  started: Promise<void>;
}
let sharedHeapSampling: HeapSampling | undefined;

async function acquireHeapSampler(): Promise<HeapSampler> {
  if (!sharedHeapSampling) {
    const session = new Session();
    session.connect();
    const shared: HeapSampling = {
      session,
      users: 0,
      started: (async () => {
        await session.post('HeapProfiler.enable');
        await session.post('HeapProfiler.startSampling', { samplingInterval: HEAP_SAMPLING_INTERVAL_BYTES });
      })(),
    };
    sharedHeapSampling = shared;
    shared.started.catch(() => {
      if (sharedHeapSampling === shared) sharedHeapSampling = undefined;
      session.disconnect();
    });
  }
  const shared = sharedHeapSampling;
  // Counted before waiting, so a last release meanwhile does not stop the sampling under us.
  shared.users++;
  try {
    await shared.started;
  } catch (err) {
    shared.users--;
    throw err;
  }
  let released = false;
  return {
    // The protocol's node ids and samples are missing from @types/node's SamplingHeapProfile.
    profile: async () => (await shared.session.post('HeapProfiler.getSamplingProfile')).profile as unknown as V8SamplingHeapProfile,
    async release() {
      if (released) return;
      released = true;
      if (--shared.users > 0) return;
      // Unshared at once, so a profiler starting meanwhile opens a new session.
      if (sharedHeapSampling === shared) sharedHeapSampling = undefined;
      await shared.session.post('HeapProfiler.stopSampling').catch(() => undefined);
      shared.session.disconnect();
    },
  };
}
