import type { FloeConfig } from '@floe/config';
import type { Db } from '@floe/meta';
import { localUrl } from '@floe/runtime';
import { expandAlertTemplate, parseAlertTemplate, type AlertTemplate, type AlertTemplateData, type TemplateQuery } from '@floe/query';
import type { Logger, SelfTelemetry } from '@floe/telemetry';
import type { MetricQueryOptions } from '../metricquery/plugin.ts';
import type { RuleRoutesOptions } from './routes.ts';

type RulerRoutesLimits = RuleRoutesOptions['limitsOf'];
import type { QuerierClient } from '../querier-client.ts';
import type { TableColumns } from '../table-columns.ts';
import { AlertmanagerNotifier } from './alertmanager.ts';
import { createPendingDeletions } from '../logquery/pending-deletions.ts';
import { rulerLogQuery } from './log-query.ts';
import { rulerPromQuery } from './prom-query.ts';
import { Ruler } from './ruler.ts';
import { rulerMetrics } from './ruler-metrics.ts';
import { remoteWriteSamples } from './sample-writer.ts';

export interface RulerParts {
  /** The rules API's options (always: rules are stored and listed even where none are evaluated). */
  routes: NonNullable<MetricQueryOptions['rules']>;
  /** The evaluator (ruler.enabled); started once the router listens. */
  ruler?: Ruler;
  notifier?: AlertmanagerNotifier;
}

/** Expansion with each template text parsed once (the last 1,000 kept): it runs per alert and evaluation. */
function cachedTemplates(): (text: string, data: AlertTemplateData, query: TemplateQuery) => Promise<string> {
  const parsed = new Map<string, AlertTemplate | undefined>();
  return async (text, data, query) => {
    if (!parsed.has(text)) {
      if (parsed.size >= 1000) parsed.clear();
      let template: AlertTemplate | undefined;
      try {
        template = parseAlertTemplate(text);
      } catch {
        template = undefined; // checked when the group was set; expandAlertTemplate reports it
      }
      parsed.set(text, template);
    }
    const template = parsed.get(text);
    return template ? template.expandWithQueries(data, query) : expandAlertTemplate(text, data);
  };
}

/** The ruler of a router from config.ruler: its routes, evaluator, writer and notifier. */
export function createRuler(
  config: Readonly<FloeConfig>,
  deps: { db: Db; log: Logger; querier: QuerierClient; tableColumns?: TableColumns; acceptor?: { url: string; key: string }; telemetry?: SelfTelemetry; limitsOf: RulerRoutesLimits },
): RulerParts {
  const r = config.ruler;
  const routes = {
    db: deps.db,
    checkTemplate: (text: string) => void parseAlertTemplate(text),
    limitsOf: deps.limitsOf,
    evaluationIntervalMs: r.evaluation_interval,
  };
  if (!r.enabled) return { routes };
  const log = deps.log.child({ component: 'ruler' });
  const notifier = r.alertmanager_urls.length > 0 ? new AlertmanagerNotifier({ urls: r.alertmanager_urls, log }) : undefined;
  const key = config.auth.internal_service_key || deps.acceptor?.key || '';
  const url = r.remote_write_url || (deps.acceptor ? `${deps.acceptor.url}/api/v1/write` : `${localUrl(config, config.acceptor.http_port)}/api/v1/write`);
  const ruler = new Ruler({
    db: deps.db,
    log,
    queries: {
      promql: rulerPromQuery({ querier: deps.querier, queryTimeoutMs: config.router.query_timeout, maxSamples: config.router.max_query_samples, tableColumns: deps.tableColumns, defaultSubqueryStepMs: r.evaluation_interval }),
      logql: rulerLogQuery({ querier: deps.querier, queryTimeoutMs: config.router.query_timeout, tableColumns: deps.tableColumns, pendingDeletions: createPendingDeletions(deps.db, log) }),
    },
    expand: cachedTemplates(),
    writer: remoteWriteSamples(() => ({ url, key, timeoutMs: config.router.query_timeout })),
    ...(notifier ? { notifier } : {}),
    metrics: rulerMetrics(deps.telemetry, notifier),
    evaluationIntervalMs: r.evaluation_interval,
    pollIntervalMs: r.poll_interval,
    queryOffsetMs: r.query_offset,
    resendDelayMs: r.resend_delay,
    forOutageToleranceMs: r.for_outage_tolerance,
    externalLabels: r.external_labels,
    externalUrl: config.public.api_url,
  });
  return { routes, ruler, ...(notifier ? { notifier } : {}) };
}
