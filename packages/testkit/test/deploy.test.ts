import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { loadConfig } from '@floe/config';
import { TARGETS } from '@floe/cli';

/**
 * No Docker engine runs here, so docker-compose.yml and deploy/ are kept correct by validation:
 * every service runs a real `floe` target, the shared config file passes Floe's own validation
 * with the environment each container gets, and probes point at the ports that config binds.
 */
const root = join(import.meta.dirname, '../../..');
const read = (p: string) => readFileSync(join(root, p), 'utf8');
const configFile = join(root, 'deploy/config/floe-cluster.yaml');

const readyPort = (cfg: ReturnType<typeof loadConfig>, target: string): number =>
  ({ acceptor: cfg.acceptor.http_port, router: cfg.router.port, writer: cfg.writer.admin_port, querier: cfg.querier.admin_port, compactor: cfg.compactor.admin_port, planning: cfg.planning.port })[target]!;

describe('deployment files', () => {
  it('docker-compose services run valid targets with a valid config', () => {
    const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, { command?: string[]; environment?: Record<string, string>; healthcheck?: { test: string[] } }> };
    const floeServices = Object.entries(compose.services).filter(([, s]) => s.command && (TARGETS as readonly string[]).includes(s.command[0]!));
    expect(floeServices.map(([n]) => n).sort()).toEqual(['acceptor', 'compactor', 'planning', 'querier', 'router', 'writer']);
    for (const [name, svc] of floeServices) {
      const env = Object.fromEntries(Object.entries(svc.environment ?? {}).map(([k, v]) => [k, String(v).replace(/\$\{[^}]+:-([^}]*)\}/g, '$1')]));
      const cfg = loadConfig({ file: configFile, env });
      expect(cfg.meta.kind).toBe('pg');
      expect(cfg.storage.kind).toBe('s3');
      expect(cfg.limits.store).toBe('redis');
      expect(svc.healthcheck!.test.join(' ')).toContain(`:${readyPort(cfg, name)}/ready`);
    }
    // Grafana's data sources reach the router's port and read the provisioning under deploy/.
    const grafana = parse(read('docker-compose.yml'), { merge: true }).services.grafana as { environment: Record<string, string>; volumes: string[] };
    expect(grafana.environment.FLOE_URL).toBe(`http://router:${loadConfig({ file: configFile, env: {} }).router.port}`);
    expect(grafana.volumes).toEqual(['./deploy/grafana/provisioning:/etc/grafana/provisioning:ro', './deploy/grafana/dashboards:/var/lib/grafana/dashboards/floe:ro']);
    expect(read('deploy/grafana/provisioning/datasources/floe.yaml')).toContain('${FLOE_URL}/tracequery');
    // The dashboard provider reads where the dashboards are mounted.
    const providers = parse(read('deploy/grafana/provisioning/dashboards/floe.yaml')) as { providers: Array<{ options: { path: string } }> };
    expect(providers.providers.map((p) => p.options.path)).toEqual(['/var/lib/grafana/dashboards/floe']);
    // The Redis the shared config names runs beside them.
    expect(new URL(loadConfig({ file: configFile, env: {} }).limits.redis_url).hostname).toBe('redis');
    expect(Object.keys(compose.services)).toContain('redis');
  });

  it('docker-compose Prometheus scrapes /metrics on the port each service binds and loads the alerts', () => {
    const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, { image?: string; command?: string[]; ports?: string[]; volumes?: string[] }> };
    const prometheus = compose.services.prometheus!;
    expect(prometheus.image).toBe('prom/prometheus:v3.5.0');
    expect(prometheus.ports).toEqual(['9090:9090']);
    expect(prometheus.volumes).toEqual(['./deploy/prometheus:/etc/prometheus:ro']);
    expect(prometheus.command).toEqual(['--config.file=/etc/prometheus/prometheus.yaml']);
    // The config the mount puts at /etc/prometheus/prometheus.yaml, its rule file beside it.
    const prom = parse(read('deploy/prometheus/prometheus.yaml')) as { rule_files: string[]; scrape_configs: Array<{ job_name: string; metrics_path?: string; static_configs: Array<{ targets: string[] }> }> };
    expect(prom.rule_files).toEqual(['floe-alerts.yaml']);
    expect(read('deploy/prometheus/floe-alerts.yaml')).toContain('groups:');
    // Every scraped port is the one the shared config gives that service (the port of its /ready).
    const cfg = loadConfig({ file: configFile, env: {} });
    const floeJobs = prom.scrape_configs.filter((j) => j.job_name.startsWith('floe-'));
    expect(floeJobs.map((j) => j.job_name).sort()).toEqual(['floe-acceptor', 'floe-compactor', 'floe-querier', 'floe-router', 'floe-writer']);
    for (const job of floeJobs) {
      const service = job.job_name.slice('floe-'.length);
      expect(job.metrics_path).toBe('/metrics');
      expect(job.static_configs.flatMap((c) => c.targets)).toEqual([`${service}:${readyPort(cfg, service)}`]);
      expect(compose.services[service]?.command).toEqual([service]);
    }
    // Grafana's monitoring data source reaches that Prometheus by its compose service name.
    const monitoring = parse(read('deploy/grafana/provisioning/datasources/floe-monitoring.yaml')) as { datasources: Array<{ uid: string; type: string; url: string }> };
    expect(monitoring.datasources).toEqual([expect.objectContaining({ uid: 'floe-monitoring', type: 'prometheus', url: `http://prometheus:${prometheus.ports![0]!.split(':')[1]}` })]);
  });

  it('Kubernetes deployments run valid targets and probe /ready on the configured port', () => {
    const docs = parseAllDocuments(read('deploy/k8s/floe.yaml')).map((d) => d.toJS() as Record<string, any>);
    expect(docs.every((d) => typeof d.kind === 'string' && d.metadata?.name)).toBe(true);
    const cm = docs.find((d) => d.kind === 'ConfigMap')!;
    expect(cm.data['floe.yaml']).toBe(read('deploy/config/floe-cluster.yaml'));
    const cfg = loadConfig({ file: configFile, env: {} });
    const deployments = docs.filter((d) => d.kind === 'Deployment');
    expect(deployments).toHaveLength(6);
    for (const d of deployments) {
      const c = d.spec.template.spec.containers[0];
      const target = c.args[0] as string;
      expect(TARGETS).toContain(target);
      expect(c.readinessProbe.httpGet).toEqual({ path: '/ready', port: readyPort(cfg, target) });
      // Prometheus's scrape annotations name the same port: every service serves /metrics beside /ready.
      expect(d.spec.template.metadata.annotations).toEqual({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': String(readyPort(cfg, target)), 'prometheus.io/path': '/metrics' });
      expect(docs.some((s) => s.kind === 'Service' && s.metadata.name === target)).toBe(true);
    }
    expect(cfg.router.querier_urls).toEqual(['querier:50054']);
    // The router reaches the compactor's admin port for /api/v1/ops/compact.
    expect(new URL(cfg.router.compactor_url).host).toBe(`compactor:${cfg.compactor.admin_port}`);
  });
});
