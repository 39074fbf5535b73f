import { readdirSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { loadavg } from 'node:os';

/**
 * A closed-loop load generator: `concurrency` workers, each sending its next request as soon as
 * the previous one is answered, until `seconds` have passed or its stream ends. Counts the items
 * of answers the target acknowledged (2xx) and every other answer or network failure as an error
 * (not retried: the next body of the stream follows).
 */
export interface DriveOptions {
  url: string;
  headers: Record<string, string>;
  seconds: number;
  concurrency: number;
  /**
   * The next body of worker `w`'s stream and how many items it carries (undefined: the stream
   * ended); `headers`, when given, are added over `headers` above for that request alone (another
   * tenant's key, say).
   */
  next: (worker: number) => { body: Uint8Array; items: number; headers?: Record<string, string> } | undefined;
  /** Called every `tickMs` (default 5 s) while the load runs. */
  onTick?: () => void;
  tickMs?: number;
}

export interface DriveResult {
  items: number;
  requests: number;
  bytes: number;
  errors: number;
  /** Status → count of non-2xx answers ('network' for failures). */
  errorKinds: Record<string, number>;
  firstError: string | undefined;
  seconds: number;
}

export async function drive(opts: DriveOptions): Promise<DriveResult> {
  const r: DriveResult = { items: 0, requests: 0, bytes: 0, errors: 0, errorKinds: {}, firstError: undefined, seconds: 0 };
  const started = Date.now();
  const end = started + opts.seconds * 1000;
  const tick = opts.onTick ? setInterval(opts.onTick, opts.tickMs ?? 5000) : undefined;
  const fail = (kind: string, text: string) => {
    r.errors++;
    r.errorKinds[kind] = (r.errorKinds[kind] ?? 0) + 1;
    r.firstError ??= text.slice(0, 300);
  };
  const agent = new (opts.url.startsWith('https:') ? HttpsAgent : Agent)({ keepAlive: true, maxSockets: opts.concurrency });
  await Promise.all(
    Array.from({ length: opts.concurrency }, async (_, w) => {
      while (Date.now() < end) {
        const req = opts.next(w);
        if (!req) break;
        try {
          const res = await post(agent, opts.url, req.body, req.headers ? { ...opts.headers, ...req.headers } : opts.headers);
          const answer = res.body;
          r.requests++;
          if (res.status >= 200 && res.status < 300) {
            r.items += req.items;
            r.bytes += req.body.byteLength;
          } else fail(String(res.status), `${res.status} ${answer.toString('utf8')}`);
        } catch (err) {
          fail('network', String(err));
        }
      }
    }),
  );
  if (tick) clearInterval(tick);
  agent.destroy();
  r.seconds = (Date.now() - started) / 1000;
  return r;
}

/**
 * A run of drive() with what it cost: CPU seconds of the receiver and of this load generator, the
 * load average after, and the receiver's CPU seconds by kind of thread (threadCpuSeconds).
 */
export interface MeasuredDrive extends DriveResult {
  cpu: number;
  genCpu: number;
  load: string;
  threads: Map<string, number>;
  /** The whole machine's CPU seconds by state over the run (machineCpuSeconds): is anything left idle? */
  machine: Map<string, number>;
}

/** drive() against the receiver with process id `pid`, measuring what it cost (MeasuredDrive). */
export async function measuredDrive(pid: number, opts: DriveOptions): Promise<MeasuredDrive> {
  const cpu0 = cpuSeconds(pid);
  const threads0 = threadCpuSeconds(pid);
  const gen0 = ownCpuSeconds();
  const machine0 = machineCpuSeconds();
  const r = await drive(opts);
  const threads = threadCpuSeconds(pid);
  for (const [kind, seconds] of threads) threads.set(kind, seconds - (threads0.get(kind) ?? 0));
  const machine = machineCpuSeconds();
  for (const [state, seconds] of machine) machine.set(state, seconds - (machine0.get(state) ?? 0));
  return { ...r, cpu: cpuSeconds(pid) - cpu0, genCpu: ownCpuSeconds() - gen0, load: loadAverage(), threads, machine };
}

/**
 * Two measured runs as one: items, requests, bytes, errors, time and CPU added up (by kind of
 * thread too), the load average of the later. For a baseline measured half before and half after
 * the run it is compared with, so that the machine's drift over the run weighs on both sides.
 */
export function combinedDrives(a: MeasuredDrive, b: MeasuredDrive): MeasuredDrive {
  const errorKinds = { ...a.errorKinds };
  for (const [kind, n] of Object.entries(b.errorKinds)) errorKinds[kind] = (errorKinds[kind] ?? 0) + n;
  const threads = new Map(a.threads);
  for (const [kind, seconds] of b.threads) threads.set(kind, (threads.get(kind) ?? 0) + seconds);
  const machine = new Map(a.machine);
  for (const [state, seconds] of b.machine) machine.set(state, (machine.get(state) ?? 0) + seconds);
  return {
    items: a.items + b.items,
    requests: a.requests + b.requests,
    bytes: a.bytes + b.bytes,
    errors: a.errors + b.errors,
    errorKinds,
    firstError: a.firstError ?? b.firstError,
    seconds: a.seconds + b.seconds,
    cpu: a.cpu + b.cpu,
    genCpu: a.genCpu + b.genCpu,
    load: b.load,
    threads,
    machine,
  };
}

/** Linux's names of a Node process's threads (/proc/<pid>/task/<tid>/comm), as the kinds a summary names. */
const THREAD_KINDS: Record<string, string> = {
  MainThread: 'event loop',
  WorkerThread: 'worker threads',
  V8Worker: "V8's helpers (GC, compiler)",
  'libuv-worker': "libuv's pool",
};

/**
 * CPU seconds so far of each kind of thread of process `pid` (THREAD_KINDS; anything else is
 * `other`), from /proc (Linux); empty elsewhere. Threads that ended are not counted.
 */
export function threadCpuSeconds(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const kind = THREAD_KINDS[readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim()] ?? 'other';
        out.set(kind, (out.get(kind) ?? 0) + statCpuSeconds(`/proc/${pid}/task/${tid}/stat`));
      } catch {
        // The thread ended between the listing and the read.
      }
    }
  } catch {
    // Not Linux, or the process is gone.
  }
  return out;
}

/** The receiver's cores by kind of thread over a measured run, largest first ("event loop 0.71, ..."). */
export const threadSummary = (r: MeasuredDrive) =>
  [...r.threads]
    .filter(([, s]) => s > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([kind, s]) => `${kind} ${(s / r.seconds).toFixed(2)}`)
    .join(', ');

/**
 * The whole machine's CPU seconds so far by state (the `cpu` line of /proc/stat: user, system,
 * idle, iowait, softirq, steal, …), from /proc (Linux); empty elsewhere. Tells whether a run left
 * cores idle (waiting on fsync or on a busy thread) or ran out of them, and what a VM's host took.
 */
export function machineCpuSeconds(): Map<string, number> {
  const out = new Map<string, number>();
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    // USER_HZ is 100 on every Linux this runs on.
    ['user', 'nice', 'system', 'idle', 'iowait', 'irq', 'softirq', 'steal'].forEach((state, i) => out.set(state, (fields[i] ?? 0) / 100));
  } catch {
    // Not Linux.
  }
  return out;
}

/** The machine's cores by state over a measured run that are not busy running processes: idle, iowait, softirq, steal. */
export const machineSummary = (r: MeasuredDrive) =>
  ['idle', 'iowait', 'irq', 'softirq', 'steal']
    .map((state) => `${state} ${((r.machine.get(state) ?? 0) / r.seconds).toFixed(2)}`)
    .join(', ');

/** `N errors` of a run, with their kinds and the first one when there are any. */
export const errorSummary = (r: DriveResult) => `${r.errors} errors${r.errors ? ` ${JSON.stringify(r.errorKinds)}, first: ${r.firstError}` : ''}`;

export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); NaN elsewhere. */
export function cpuSeconds(pid: number): number {
  try {
    return statCpuSeconds(`/proc/${pid}/stat`);
  } catch {
    return NaN;
  }
}

/** utime + stime of a /proc stat file (a process's or a thread's), in seconds. */
function statCpuSeconds(path: string): number {
  const stat = readFileSync(path, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // clock ticks (USER_HZ = 100)
}

/** CPU seconds of this (load generator) process so far. */
export const ownCpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

export const loadAverage = () => loadavg().map((x) => x.toFixed(2)).join(' ');

/**
 * One POST on a keep-alive connection of `agent`, the body read to its end. node:http rather than
 * fetch: fetch cost this process ~400 µs of CPU per request (about 3x what the baseline's
 * receiver spends), so the generator, not the receiver, bounded the baseline, and it took CPU
 * from the receiver on a machine the two share. node:http costs ~130 µs, as an OpenTelemetry
 * SDK's own exporter (also node:http) would.
 */
/** One POST on a keep-alive agent: the answer's status and body. */
export function post(agent: Agent, url: string, body: Uint8Array, headers: Record<string, string>): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = (url.startsWith('https:') ? httpsRequest : request)(url, { method: 'POST', agent, headers: { ...headers, 'content-length': String(body.byteLength) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
