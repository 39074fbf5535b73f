import type { Meter } from '@opentelemetry/api';

/**
 * Two gauges read at each collection: the bytes something holds now and its limit (the setting's
 * value in bytes), for memory budgets an operator watches fill (a querier's held results, a
 * router's held answers).
 */
export function observeBytesAndLimit(meter: Meter, names: { bytes: string; limit: string }, o: { description: string; setting: string; read: () => { bytes: number; max: number } }): void {
  const bytes = meter.createObservableGauge(names.bytes, { description: o.description, unit: 'By' });
  const limit = meter.createObservableGauge(names.limit, { description: `${o.setting} in bytes`, unit: 'By' });
  meter.addBatchObservableCallback(
    (r) => {
      const now = o.read();
      r.observe(bytes, now.bytes);
      r.observe(limit, now.max);
    },
    [bytes, limit],
  );
}
