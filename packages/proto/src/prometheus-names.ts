/**
 * Prometheus names of OpenTelemetry metrics (the OpenTelemetry specification's Prometheus
 * compatibility), as Prometheus's OTLP receiver makes them with its default (underscore
 * escaping, with suffixes): one definition for the PromQL engine reading stored OTLP metrics
 * (@floe/query) and for the services' own `GET /metrics` (@floe/telemetry), so a dashboard
 * written against one reads the other.
 */
const UNIT_WORDS: Record<string, string> = {
  d: 'days', h: 'hours', min: 'minutes', s: 'seconds', ms: 'milliseconds', us: 'microseconds', ns: 'nanoseconds',
  By: 'bytes', KiBy: 'kibibytes', MiBy: 'mebibytes', GiBy: 'gibibytes', TiBy: 'tebibytes',
  KBy: 'kilobytes', MBy: 'megabytes', GBy: 'gigabytes', TBy: 'terabytes',
  m: 'meters', V: 'volts', A: 'amperes', J: 'joules', W: 'watts', g: 'grams', Cel: 'celsius', Hz: 'hertz', '%': 'percent',
};
const PER_UNIT_WORDS: Record<string, string> = { s: 'second', m: 'minute', h: 'hour', d: 'day', w: 'week', mo: 'month', y: 'year' };

const tokens = (s: string) => s.split(/[^a-zA-Z0-9:]+/).filter((t) => t !== '');

/** The Prometheus name of an OpenTelemetry metric (base name of histograms and summaries). */
export function otelPromName(name: string, unit: string, metricType: string, isMonotonic: boolean): string {
  const parts = tokens(name);
  const cleanUnit = unit.replace(/\{[^}]*\}/g, '').trim();
  if (cleanUnit !== '' && cleanUnit !== '1') {
    const [main = '', per = ''] = cleanUnit.split('/', 2);
    const mainWord = UNIT_WORDS[main] ?? tokens(main).join('_');
    if (mainWord !== '' && !parts.includes(mainWord)) parts.push(...tokens(mainWord));
    if (per !== '') {
      const perWord = PER_UNIT_WORDS[per] ?? tokens(per).join('_');
      if (perWord !== '' && !parts.includes(perWord)) parts.push('per', ...tokens(perWord));
    }
  }
  if (metricType === 'sum' && isMonotonic) {
    const i = parts.indexOf('total');
    if (i >= 0) parts.splice(i, 1);
    parts.push('total');
  }
  if (metricType === 'gauge' && cleanUnit === '1' && !parts.includes('ratio')) parts.push('ratio');
  let out = parts.join('_');
  if (/^[0-9]/.test(out)) out = `_${out}`;
  return out;
}

/** A Prometheus label name for an attribute key. */
export function otelLabelName(key: string): string {
  let out = key.replace(/[^a-zA-Z0-9_]/g, '_');
  if (/^[0-9]/.test(out)) out = `key_${out}`;
  return out;
}
