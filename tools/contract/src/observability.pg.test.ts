/**
 * The Grafana dashboard (deploy/grafana) and the alerting rules
 * (deploy/prometheus) only name metrics a coordinator exports: every
 * `kairos_…` in their expressions is read against the metric families a live
 * coordinator lists on /metrics (histograms with their _bucket/_sum/_count).
 * And each signal a pager needs has an alert and a panel.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';
import { createTestDatabase, startCoordinatorProcess, stopAll, type TestDatabase } from '@kairos/testing';
import { ROOT } from './client-env';

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: { severity?: string };
  annotations?: { summary?: string; description?: string };
}

/** The metric names an expression reads. */
function metricsIn(expr: string): string[] {
  return [...new Set(expr.match(/\bkairos_[a-z0-9_]+/g) ?? [])];
}

function exprsOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(exprsOf);
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) => (key === 'expr' && typeof inner === 'string' ? [inner] : exprsOf(inner)));
}

describe('dashboard and alerting rules', () => {
  let db: TestDatabase;
  let exported: Set<string>;
  let dashboardExprs: string[];
  let rules: Rule[];

  beforeAll(async () => {
    db = await createTestDatabase();
    const { httpUrl } = await startCoordinatorProcess({ databaseUrl: db.url });
    const text = await (await fetch(`${httpUrl}/metrics`)).text();
    exported = new Set();
    for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      const [, name, type] = match as unknown as [string, string, string];
      exported.add(name);
      if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) exported.add(`${name}${suffix}`);
    }
    const dashboard = JSON.parse(await readFile(path.join(ROOT, 'deploy/grafana/kairos-dashboard.json'), 'utf8')) as { panels: unknown[]; uid: string };
    expect(dashboard.uid).toBe('kairos-overview');
    dashboardExprs = exprsOf(dashboard.panels);
    const file = parse(await readFile(path.join(ROOT, 'deploy/prometheus/kairos-rules.yaml'), 'utf8')) as { groups: Array<{ rules: Rule[] }> };
    rules = file.groups.flatMap((group) => group.rules);
  }, 60_000);
  afterAll(async () => {
    await stopAll();
    await db?.drop();
  });

  test('the coordinator exports the pager metrics', () => {
    for (const name of [
      'kairos_runs_finished_total',
      'kairos_jobs_dead_total',
      'kairos_occurrences_skipped_total',
      'kairos_oldest_overdue_job_seconds',
      'kairos_task_overdue_jobs',
      'kairos_task_agents',
      'kairos_agents_quarantined',
    ]) {
      expect(exported).toContain(name);
    }
  });

  test('every dashboard query names only exported metrics', () => {
    expect(dashboardExprs.length).toBeGreaterThan(10);
    const unknown = dashboardExprs.flatMap(metricsIn).filter((name) => !exported.has(name));
    expect(unknown).toEqual([]);
  });

  test('every alert names only exported metrics, and says how bad and what to do', () => {
    expect(rules.length).toBeGreaterThan(5);
    for (const rule of rules) {
      expect(metricsIn(rule.expr).filter((name) => !exported.has(name))).toEqual([]);
      expect(metricsIn(rule.expr).length).toBeGreaterThan(0);
      expect(['critical', 'warning', 'info']).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary).toBeTruthy();
      expect(rule.annotations?.description).toBeTruthy();
    }
  });

  test.each([
    ['a job died', 'kairos_jobs_dead_total'],
    ['runs fail', 'kairos_runs_finished_total'],
    ['an occurrence was missed', 'kairos_occurrences_skipped_total'],
    ['work is overdue', 'kairos_oldest_overdue_job_seconds'],
    ['a task has no agent', 'kairos_task_agents'],
    ['an agent is quarantined', 'kairos_agents_quarantined'],
  ])('when %s there is an alert and a panel (%s)', (_what, metric) => {
    expect(rules.some((rule) => metricsIn(rule.expr).includes(metric))).toBe(true);
    expect(dashboardExprs.some((expr) => metricsIn(expr).includes(metric))).toBe(true);
  });
});
