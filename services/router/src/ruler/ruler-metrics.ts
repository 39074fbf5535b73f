import { noSelfTelemetry, type Counter, type Histogram, type SelfTelemetry } from '@floe/telemetry';
import type { AlertmanagerNotifier } from './alertmanager.ts';

/**
 * The ruler's self-monitoring instruments, the counterparts of Prometheus's
 * prometheus_rule_evaluations_total, …_evaluation_failures_total, …_group_last_duration_seconds and
 * prometheus_notifications_{sent,dropped,errors}_total. Attributes: tenant.id and language.
 */
export interface RulerMetrics {
  evaluations: Counter;
  evaluationFailures: Counter;
  groupDuration: Histogram;
}

export function rulerMetrics(telemetry: SelfTelemetry = noSelfTelemetry, notifier?: AlertmanagerNotifier): RulerMetrics {
  const m = telemetry.meter;
  if (notifier) {
    const sent = m.createObservableCounter('ruler_notifications_sent', { description: 'Alerts the Alertmanagers accepted' });
    const dropped = m.createObservableCounter('ruler_notifications_dropped', { description: 'Alerts lost: queue full, refused by every Alertmanager, or left at stop' });
    const errors = m.createObservableCounter('ruler_notification_errors', { description: 'Failed requests to an Alertmanager' });
    m.addBatchObservableCallback(
      (result) => {
        const s = notifier.stats();
        result.observe(sent, s.sent);
        result.observe(dropped, s.dropped);
        result.observe(errors, s.errors);
      },
      [sent, dropped, errors],
    );
  }
  return {
    evaluations: m.createCounter('rule_evaluations', { description: 'Rule evaluations by the ruler' }),
    evaluationFailures: m.createCounter('rule_evaluation_failures', { description: 'Rule evaluations that failed (query error, limit, writing the results)' }),
    groupDuration: m.createHistogram('rule_group_duration', { description: 'Duration of one evaluation of a rule group', unit: 's' }),
  };
}
