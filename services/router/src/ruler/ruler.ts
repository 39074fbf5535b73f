import { randomBytes } from 'node:crypto';
import { acquireLease, listRuleGroups, listRuleGroupVersions, releaseLease, saveRuleGroupState, type Db, type RuleGroupKey, type RuleLanguage, type StoredRuleGroup } from '@floe/meta';
import { ruleGroupFromJson, STALE_NAN, type AlertTemplateData, type FreshLayers, type InstantResult, type RuleGroup, type TemplateQuery } from '@floe/query';
import type { Logger } from '@floe/telemetry';
import type { AlertmanagerNotifier } from './alertmanager.ts';
import { evaluateGroup, restoreGroupState, type DueAlert, type EvaluationContext, type GroupState, type Labels } from './group-evaluation.ts';
import type { RulerMetrics } from './ruler-metrics.ts';
import type { SampleWriter } from './sample-writer.ts';
import { RecentWrites } from './recent-writes.ts';
import { storableJson } from './storable.ts';

/**
 * The ruler's scheduler. One router of a deployment evaluates (it holds the `ruler` lease in the
 * metadata DB, renewed every poll; another takes over within three polls when it stops); it reloads
 * the rule groups every poll, evaluates each group on its own interval at aligned timestamps,
 * writes the results through `writer`, sends due alerts to the Alertmanagers and saves each
 * group's state, from which a new evaluator restores pending and firing alerts.
 */

/**
 * An instant query of a tenant's dataset at `t` (ms) in one rule language. `fresh` holds the
 * samples storage may not show yet: this ruler's writes of the last minute, then what the group's
 * earlier rules wrote at this evaluation (PromQL reads them; LogQL reads logs).
 */
export type RuleQuery = (tenant: string, dataset: string, expr: string, t: number, fresh: FreshLayers) => Promise<InstantResult>;

export interface RulerOptions {
  db: Db;
  log: Logger;
  /** The instant query of a tenant's dataset, per rule language (PromQL; LogQL metric queries). */
  queries: Record<RuleLanguage, RuleQuery>;
  /** Expands an alert template (never throws). */
  expand: (template: string, data: AlertTemplateData, query: TemplateQuery) => Promise<string>;
  writer: SampleWriter;
  notifier?: AlertmanagerNotifier;
  evaluationIntervalMs: number;
  pollIntervalMs: number;
  queryOffsetMs: number;
  resendDelayMs: number;
  forOutageToleranceMs: number;
  externalLabels: Labels;
  /** public.api_url: alerts link back to the query API from there. */
  externalUrl: string;
  /** Self-monitoring (absent: nothing recorded). */
  metrics?: RulerMetrics;
  /** Groups evaluated at once at most. */
  concurrency?: number;
  now?: () => number;
}

interface Scheduled {
  stored: StoredRuleGroup;
  group: RuleGroup;
  intervalMs: number;
  offsetMs: number;
  /** The next aligned evaluation time (ms). */
  next: number;
  state: GroupState;
  running: boolean;
}

const LEASE = 'ruler';
/** Where an alert's generatorURL points: the instant query of its expression. */
const QUERY_PATH: Record<RuleLanguage, string> = { promql: '/metricquery/api/v1/query', logql: '/logquery/loki/api/v1/query' };
const keyOf = (g: RuleGroupKey) => `${g.tenantId}\u0000${g.datasetId}\u0000${g.language}\u0000${g.namespace}\u0000${g.name}`;

/** A stable spread of the groups' evaluation times over their interval (Prometheus hashes the group too). */
function offsetOf(key: string, intervalMs: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193) >>> 0;
  return h % intervalMs;
}

export class Ruler {
  readonly #opts: RulerOptions;
  readonly #holder = `router-${randomBytes(6).toString('hex')}`;
  readonly #now: () => number;
  #groups = new Map<string, Scheduled>();
  readonly #recent = new RecentWrites();
  #leader = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #tick: ReturnType<typeof setInterval> | undefined;
  #stopped = false;
  #polling: Promise<void> | undefined;
  #running = 0;
  #inFlight = new Set<Promise<void>>();

  constructor(opts: RulerOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
  }

  /** Whether this router evaluates now. */
  get leader(): boolean {
    return this.#leader;
  }

  start(): void {
    const poll = () => {
      if (this.#stopped) return;
      this.#polling = this.poll()
        .catch((err: unknown) => {
          if (!this.#stopped) this.#opts.log.warn({ err }, 'ruler: poll failed');
        })
        .finally(() => {
          this.#polling = undefined;
          if (!this.#stopped) this.#timer = setTimeout(poll, this.#opts.pollIntervalMs);
        });
    };
    poll();
    // Due groups are looked for every quarter second; each evaluates at its own aligned times.
    this.#tick = setInterval(() => this.#runDue(), 250);
    this.#tick.unref?.();
  }

  /** Renews (or takes) the lease and reloads the groups. */
  async poll(): Promise<void> {
    const leader = await acquireLease(this.#opts.db, LEASE, this.#holder, 3 * this.#opts.pollIntervalMs);
    // stop() ran meanwhile: it waits for this poll, then gives the lease up; nothing more here.
    if (this.#stopped) {
      this.#leader = leader;
      return;
    }
    if (leader !== this.#leader) this.#opts.log.info({ holder: this.#holder }, leader ? 'ruler: evaluating rules here' : 'ruler: another router evaluates the rules');
    this.#leader = leader;
    if (!leader) {
      this.#groups.clear();
      return;
    }
    await this.#reload();
  }

  /**
   * Polls the groups' versions and reads definitions and saved states only of the groups that are
   * new or changed since the last poll (all of them when this router has just taken the lease).
   */
  async #reload(): Promise<void> {
    const versions = await listRuleGroupVersions(this.#opts.db, { enabledTenantsOnly: true });
    const changed = versions.filter((v) => this.#groups.get(keyOf(v))?.stored.version !== v.version);
    const fetched = changed.length > 0 ? await listRuleGroups(this.#opts.db, { keys: changed }) : [];
    const next = new Map<string, Scheduled>();
    for (const v of versions) {
      const key = keyOf(v);
      const had = this.#groups.get(key);
      if (had && had.stored.version === v.version) next.set(key, had);
    }
    const now = this.#now();
    for (const s of fetched) {
      const key = keyOf(s);
      let group: RuleGroup;
      try {
        group = ruleGroupFromJson(s.definition);
      } catch (err) {
        this.#opts.log.warn({ err, tenant: s.tenantId, namespace: s.namespace, group: s.name }, 'ruler: stored rule group unreadable; skipped');
        continue;
      }
      const intervalMs = group.intervalMs ?? this.#opts.evaluationIntervalMs;
      const offsetMs = offsetOf(key, intervalMs);
      next.set(key, {
        stored: s,
        group,
        intervalMs,
        offsetMs,
        next: alignedAfter(now, intervalMs, offsetMs),
        state: restoreGroupState(group, s.state as GroupState | null, now, this.#opts.forOutageToleranceMs),
        running: false,
      });
    }
    const gone = [...this.#groups].filter(([key, g]) => next.get(key) !== g).map(([, g]) => g);
    this.#groups = next;
    await Promise.all(gone.map((g) => this.#endSeries(g, now)));
  }

  /**
   * Staleness markers for every series a removed or replaced group wrote last, as Prometheus
   * writes them when a reload drops rules: queries stop seeing them at once, not after the
   * lookback delta.
   */
  async #endSeries(g: Scheduled, now: number): Promise<void> {
    const samples = g.state.rules.flatMap((r) => r.series.map((labels) => ({ labels, t: now, v: STALE_NAN })));
    if (samples.length === 0) return;
    await this.#opts.writer.write(g.stored.tenantId, g.stored.datasetId, samples).then(
      () => this.#recent.record(g.stored.tenantId, g.stored.datasetId, samples, this.#now()),
      (err: unknown) => {
        this.#opts.log.warn({ err, tenant: g.stored.tenantId, namespace: g.stored.namespace, group: g.stored.name }, 'ruler: ending the series of a removed rule group failed');
      },
    );
  }

  #runDue(): void {
    if (!this.#leader || this.#stopped) return;
    const now = this.#now();
    const limit = this.#opts.concurrency ?? 4;
    if (this.#running >= limit) return;
    // The longest overdue first: when evaluations cannot keep up, no group (and no tenant) is
    // always the one left waiting.
    const due = [...this.#groups.values()].filter((g) => !g.running && g.next <= now).sort((a, b) => a.next - b.next);
    for (const g of due) {
      if (this.#running >= limit) return;
      // Evaluations missed while busy or away are skipped, as Prometheus does: the latest due time counts.
      const ts = alignedAtOrBefore(now, g.intervalMs, g.offsetMs);
      g.next = ts + g.intervalMs;
      g.running = true;
      this.#running++;
      const p = this.#evaluate(g, ts)
        .catch((err: unknown) => this.#opts.log.warn({ err, tenant: g.stored.tenantId, namespace: g.stored.namespace, group: g.stored.name }, 'ruler: group evaluation failed'))
        .finally(() => {
          g.running = false;
          this.#running--;
          this.#inFlight.delete(p);
        });
      this.#inFlight.add(p);
    }
  }

  /** Evaluates one scheduled group at `ts`. */
  async #evaluate(g: Scheduled, ts: number): Promise<void> {
    const { stored, group } = g;
    const queryOffset = group.queryOffsetMs ?? this.#opts.queryOffsetMs;
    const at = ts - queryOffset;
    const externalURL = this.#opts.externalUrl;
    // This ruler's own writes of the last minute, which storage may not show yet (recent-writes.ts).
    const recent = this.#recent.of(stored.tenantId, stored.datasetId, this.#now());
    const ctx: EvaluationContext = {
      query: (expr, t, fresh) => this.#opts.queries[stored.language](stored.tenantId, stored.datasetId, expr, t, [recent, fresh]),
      expand: (template, labels, value, query) => this.#opts.expand(template, { labels, value, externalLabels: this.#opts.externalLabels, externalURL }, query),
      intervalMs: g.intervalMs,
      resendDelayMs: this.#opts.resendDelayMs,
    };
    const result = await evaluateGroup(group, at, g.state, ctx);
    // Rule results are written before the state is saved: if writing fails, the samples are
    // lost for this evaluation (as Prometheus's remote write would drop them after retries), but
    // alerts and their state still advance.
    let writeError: unknown;
    await this.#opts.writer.write(stored.tenantId, stored.datasetId, result.samples).then(
      () => this.#recent.record(stored.tenantId, stored.datasetId, result.samples, this.#now()),
      (err: unknown) => {
        writeError = err;
      },
    );
    if (writeError !== undefined) {
      const message = writeError instanceof Error ? writeError.message : String(writeError);
      this.#opts.log.warn({ err: writeError, tenant: stored.tenantId, namespace: stored.namespace, group: stored.name }, 'ruler: writing rule results failed');
      for (const r of result.state.rules) {
        if (r.health === 'ok' && r.series.length > 0) {
          r.health = 'err';
          r.lastError = message;
        }
      }
    }
    g.state = result.state;
    const metrics = this.#opts.metrics;
    if (metrics) {
      const attributes = { 'tenant.id': stored.tenantId, language: stored.language };
      metrics.groupDuration.record(result.state.evaluationTime, attributes);
      metrics.evaluations.add(result.state.rules.length, attributes);
      const failed = result.state.rules.filter((r) => r.health === 'err').length;
      if (failed > 0) metrics.evaluationFailures.add(failed, attributes);
    }
    if (result.due.length > 0 && this.#opts.notifier) this.#opts.notifier.send(stored.tenantId, result.due.map((a) => this.#notified(a, g)));
    await saveRuleGroupState(this.#opts.db, stored, stored.version, storableJson(result.state));
  }

  /** The alert as the Alertmanagers get it: external labels under its own, a link to its query. */
  #notified(a: DueAlert, g: Scheduled) {
    const expr = g.group.rules.find((r) => r.kind === 'alerting' && r.alert === a.labels.alertname)?.expr ?? '';
    return {
      labels: { ...this.#opts.externalLabels, ...a.labels },
      annotations: a.annotations,
      startsAt: new Date(a.startsAt),
      endsAt: new Date(a.endsAt),
      generatorURL: `${this.#opts.externalUrl.replace(/\/+$/, '')}${QUERY_PATH[g.stored.language]}?query=${encodeURIComponent(expr)}`,
    };
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#tick) clearInterval(this.#tick);
    // A poll in flight finishes first, so nothing is logged or leased after stop() returns.
    await this.#polling;
    await Promise.allSettled([...this.#inFlight]);
    if (this.#leader) await releaseLease(this.#opts.db, LEASE, this.#holder).catch(() => {});
    this.#leader = false;
  }
}

/** The latest aligned time ≤ now: offset + k·interval. */
export function alignedAtOrBefore(now: number, intervalMs: number, offsetMs: number): number {
  return Math.floor((now - offsetMs) / intervalMs) * intervalMs + offsetMs;
}

/** The first aligned time after now. */
function alignedAfter(now: number, intervalMs: number, offsetMs: number): number {
  return alignedAtOrBefore(now, intervalMs, offsetMs) + intervalMs;
}
