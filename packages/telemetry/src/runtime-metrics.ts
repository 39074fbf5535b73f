import { monitorEventLoopDelay, performance, type EventLoopUtilization } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import type { Meter } from '@opentelemetry/api';

/**
 * The process's own health as OpenTelemetry's semantic conventions name it (process.*, v8js.*,
 * nodejs.eventloop.*): CPU, memory, heap and the event loop, whose delay is what every request
 * of a Node service waits behind. Event-loop figures are taken over windows of `windowMs` (a
 * reading per window, not per collection: two readers, the scrape and the OTLP export, must not
 * reset each other's histogram).
 */
export function recordRuntimeMetrics(meter: Meter, windowMs = 10_000): { stop(): void } {
  const cpu = meter.createObservableCounter('process.cpu.time', { description: 'CPU time of the process, by mode (user, system)', unit: 's' });
  const memory = meter.createObservableUpDownCounter('process.memory.usage', { description: 'Resident set size of the process', unit: 'By' });
  const uptime = meter.createObservableGauge('process.uptime', { description: 'Time since the process started', unit: 's' });
  const heapUsed = meter.createObservableUpDownCounter('v8js.memory.heap.used', { description: 'V8 heap bytes in use, by heap space', unit: 'By' });
  const heapLimit = meter.createObservableUpDownCounter('v8js.memory.heap.limit', { description: 'V8 heap bytes the heap spaces hold now (in use or free), by heap space', unit: 'By' });
  // Outside the V8 heap and outside DuckDB's own allocator: Buffers and other native memory that
  // JavaScript objects hold, got from malloc. RSS less DuckDB and the heap is mostly this and
  // what malloc keeps after it is freed; this gauge tells the two apart (bench/soak).
  const external = meter.createObservableUpDownCounter('nodejs.memory.external', {
    description: 'Native memory that JavaScript objects hold outside the V8 heap, by nodejs.memory.type: array_buffers (Buffers and typed arrays) or other',
    unit: 'By',
  });
  const delayP99 = meter.createObservableGauge('nodejs.eventloop.delay.p99', { description: '99th percentile of event-loop delay over the last window', unit: 's' });
  const delayMax = meter.createObservableGauge('nodejs.eventloop.delay.max', { description: 'Longest event-loop delay over the last window', unit: 's' });
  const utilization = meter.createObservableGauge('nodejs.eventloop.utilization', { description: 'Share of the last window the event loop was busy (0 to 1)', unit: '1' });

  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  let window = { p99: 0, max: 0, utilization: 0 };
  let elu: EventLoopUtilization = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    // The histogram is in nanoseconds; an empty window (no sample yet) reads 0, not NaN.
    window = { p99: (delay.percentile(99) || 0) / 1e9, max: (delay.max || 0) / 1e9, utilization: performance.eventLoopUtilization(now, elu).utilization };
    elu = now;
    delay.reset();
  }, windowMs);
  timer.unref();

  meter.addBatchObservableCallback(
    (r) => {
      const usage = process.cpuUsage();
      r.observe(cpu, usage.user / 1e6, { 'cpu.mode': 'user' });
      r.observe(cpu, usage.system / 1e6, { 'cpu.mode': 'system' });
      const mem = process.memoryUsage();
      r.observe(memory, mem.rss);
      r.observe(external, mem.arrayBuffers, { 'nodejs.memory.type': 'array_buffers' });
      r.observe(external, Math.max(0, mem.external - mem.arrayBuffers), { 'nodejs.memory.type': 'other' });
      r.observe(uptime, process.uptime());
      for (const space of getHeapSpaceStatistics()) {
        const attrs = { 'v8js.heap.space.name': space.space_name };
        r.observe(heapUsed, space.space_used_size, attrs);
        r.observe(heapLimit, space.space_size, attrs);
      }
      r.observe(delayP99, window.p99);
      r.observe(delayMax, window.max);
      r.observe(utilization, window.utilization);
    },
    [cpu, memory, uptime, heapUsed, heapLimit, external, delayP99, delayMax, utilization],
  );
  return {
    stop() {
      clearInterval(timer);
      delay.disable();
    },
  };
}
