/**
 * The operators' web console (/ui) in a real headless browser (Debian's
 * chromium, driven by playwright-core), against two real coordinators on one
 * database with one agent each. An operator signs in with a token, creates an
 * `http` job that stays running (this test holds its call open), watches it
 * in the timeline, tries to cancel it and reads why not (who holds it, since
 * when, abort is the way), aborts it, pauses and resumes a recurring job, sees
 * both agents — one per coordinator — in one view, and a reader token sees no
 * action. Every view: no browser console error, no serious or critical axe
 * violation, a screenshot. The static files themselves: content types, cache
 * headers, CSP, gzip, no token needed.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import {
  createTestDatabase,
  restClient,
  startAgentProcess,
  startCoordinatorProcess,
  startHeldCalls,
  stopAll,
  type CoordinatorProcess,
  type HeldCalls,
  type TestDatabase,
} from '@kairos/testing';

const CHROMIUM = process.env['KAIROS_CHROMIUM'] ?? '/usr/bin/chromium';
const ROOT = path.resolve(__dirname, '..', '..', '..', '..');
const SHOTS = path.join(ROOT, '.tmp', 'console-screenshots');
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const STEP_MS = 20_000;

describe('the web console', () => {
  let db: TestDatabase;
  let c1: CoordinatorProcess;
  let c2: CoordinatorProcess;
  let held: HeldCalls;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const tokens: Record<string, string> = {};
  /** Browser console errors and uncaught page errors, per page. */
  const problems: string[] = [];
  /** Console errors the test provokes on purpose (the refused cancel's 409), consumed when seen. */
  const expected: RegExp[] = [];

  const watch = (target: Page) => {
    target.on('console', (message) => {
      if (message.type() !== 'error') return;
      const index = expected.findIndex((pattern) => pattern.test(message.text()));
      if (index >= 0) expected.splice(index, 1);
      else problems.push(`console: ${message.text()} (${message.location().url})`);
    });
    target.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  };

  /** No serious or critical axe violation on what the page shows now. */
  const checkAccessibility = async (target: Page, view: string) => {
    if (!(await target.evaluate(() => 'axe' in globalThis))) await target.evaluate(AXE);
    const violations = await target.evaluate(async () => {
      const result = await (globalThis as unknown as { axe: { run(): Promise<{ violations: Array<{ id: string; impact: string; help: string; nodes: unknown[] }> }> } }).axe.run();
      return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length }));
    });
    expect({ view, serious: violations.filter((v) => v.impact === 'serious' || v.impact === 'critical') }).toEqual({ view, serious: [] });
  };
  /** Job views are long: the whole page, so the timeline is in the picture. */
  const shoot = async (target: Page, name: string) => {
    await target.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: name.includes('job-') });
  };
  const view = async (target: Page, name: string) => {
    await checkAccessibility(target, name);
    await shoot(target, name);
    expect(problems).toEqual([]);
  };

  const signIn = async (target: Page, secret: string) => {
    await target.getByLabel('API token').fill(secret);
    await target.getByRole('button', { name: 'Sign in' }).click();
    await target.locator('.whoami').waitFor({ timeout: STEP_MS });
  };
  const badge = (target: Page, scope: string, text: string) => target.locator(`${scope} .badge`, { hasText: new RegExp(`^${text}$`) }).first();

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    db = await createTestDatabase();
    const store = db.createStore();
    for (const [name, role] of [
      ['oncall', 'writer'],
      ['viewer', 'reader'],
      ['agent', 'agent'],
    ] as const) {
      tokens[name] = (await store.tokens.create({ namespace: 'ops', role, name })).secret;
    }
    held = await startHeldCalls();
    const env = { KAIROS_PRESENCE_INTERVAL_MS: '500' };
    [c1, c2] = await Promise.all([
      startCoordinatorProcess({ databaseUrl: db.url, auth: true, name: 'c1', env, leaseMs: 10_000 }),
      startCoordinatorProcess({ databaseUrl: db.url, auth: true, name: 'c2', env, leaseMs: 10_000 }),
    ]);
    await startAgentProcess({ coordinator: c1!.grpcAddress, agentId: 'agent-on-c1', tasks: 'http,sleep', env: { KAIROS_TOKEN: tokens['agent']! } });
    await startAgentProcess({ coordinator: c2!.grpcAddress, agentId: 'agent-on-c2', tasks: 'http,sleep', env: { KAIROS_TOKEN: tokens['agent']! } });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(STEP_MS);
    page = await context.newPage();
    watch(page);
    process.stdout.write(`console screenshots: ${SHOTS}\n`);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await held?.close();
    await stopAll();
    await db?.drop();
  });

  test('the static files: no token, content types, cache headers, CSP, gzip; the page weight', async () => {
    const redirect = await fetch(`${c1.httpUrl}/ui`, { redirect: 'manual' });
    expect([redirect.status, redirect.headers.get('location')]).toEqual([308, '/ui/']);
    const index = await fetch(`${c1.httpUrl}/ui/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    const csp = index.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    const html = await index.text();
    expect(html).not.toMatch(/<script>|<style|style=/);
    const assets = [...html.matchAll(/(?:src|href)="\.\/([^"]+)"/g)].map((match) => match[1]!);
    expect(assets).toEqual(expect.arrayContaining([expect.stringMatching(/^app-[0-9a-f]+\.js$/), expect.stringMatching(/^app-[0-9a-f]+\.css$/)]));
    let raw = Buffer.byteLength(html);
    let gzipped = 0;
    for (const name of ['', ...assets]) {
      // Node's fetch would decompress: read the bytes on the wire with a raw request.
      const response = await fetch(`${c1.httpUrl}/ui/${name}`, { headers: { 'accept-encoding': 'gzip' } });
      expect(response.status).toBe(200);
      if (name.endsWith('.js')) expect(response.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      if (name.endsWith('.css')) expect(response.headers.get('content-type')).toBe('text/css; charset=utf-8');
      if (/^app-/.test(name)) expect(response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      const body = Buffer.from(await response.arrayBuffer());
      if (name !== '') raw += body.length;
      gzipped += Number(response.headers.get('content-length') ?? body.length);
    }
    expect((await fetch(`${c1.httpUrl}/ui/nothing-here.js`)).status).toBe(404);
    process.stdout.write(`console first load: ${raw} bytes raw, ${gzipped} bytes gzipped (HTML+JS+CSS+icon)\n`);
    expect(gzipped).toBeLessThan(30_000);
  });

  test('sign in with a writer token', async () => {
    await page.goto(`${c1.httpUrl}/ui/`);
    await page.getByLabel('API token').waitFor();
    await view(page, '01-sign-in');
    await signIn(page, tokens['oncall']!);
    expect(await page.locator('.whoami').textContent()).toBe('oncall · writer · namespace ops');
  });

  let heldJob: string;

  test('create an http job that stays running and watch it in the timeline', async () => {
    await page.getByRole('link', { name: 'New job' }).click();
    await page.getByLabel('Task').fill('http');
    await page.getByLabel('Name (optional)').fill('held-call');
    await page.getByLabel('Payload (JSON object)').fill(JSON.stringify({ url: held.url(), timeoutMs: 600_000 }));
    await view(page, '02-new-job');
    await page.getByRole('button', { name: 'Create job' }).click();
    await page.getByRole('heading', { name: 'Job held-call' }).waitFor();
    heldJob = decodeURIComponent(page.url().split('#/jobs/')[1]!);
    await held.arrived(1);
    await badge(page, '.timeline', 'RUNNING').waitFor();
    await badge(page, '.settings', 'CLAIMED').waitFor();
    await view(page, '03-job-running');
  });

  test('a cancel of the running job is explained: who holds it, since when, and that abort is the way; then abort it', async () => {
    const runs = (await restClient(c1.httpUrl, tokens['oncall']!).runs(heldJob)).body.runs as Array<{ workerId: string; startedAt: string }>;
    const holder = runs[0]!.workerId;
    expected.push(/status of 409/);
    await page.getByRole('button', { name: 'Cancel job' }).click();
    const explanation = page.locator('.explain');
    await explanation.waitFor();
    expect(await explanation.locator('.holder').textContent()).toBe(holder);
    expect(await explanation.locator('.since').textContent()).toBe(`${runs[0]!.startedAt.slice(0, 10)} ${runs[0]!.startedAt.slice(11, 19)}Z`);
    expect(await explanation.textContent()).toContain(`POST /jobs/${heldJob}/abort`);
    expect(await explanation.textContent()).toContain('fencing token');
    await view(page, '04-cancel-refused');

    await explanation.getByRole('button', { name: 'Abort this run' }).click();
    await page.getByText(/^Abort requested/).waitFor();
    await badge(page, '.timeline', 'CANCELLED').waitFor();
    await badge(page, '.settings', 'CANCELLED').waitFor();
    expect(await page.locator('.timeline .run-cancelled .why').textContent()).toContain('aborted by oncall');
    expect(expected).toEqual([]);
    await view(page, '05-job-aborted');
  });

  test('pause and resume a recurring job', async () => {
    await page.getByRole('link', { name: 'New job' }).click();
    await page.getByLabel('Task').fill('sleep');
    await page.getByLabel('Name (optional)').fill('nightly-report');
    await page.getByLabel('on a cron schedule').check();
    await page.getByLabel('Cron schedule (5 or 6 fields)').fill('30 2 * * *');
    await page.getByLabel('Time zone (cron only)').fill('Europe/Berlin');
    await page.getByLabel('Payload (JSON object)').fill('{"seconds": 0}');
    await page.getByRole('button', { name: 'Create job' }).click();
    await page.getByRole('heading', { name: 'Job nightly-report' }).waitFor();
    await badge(page, '.settings', 'DUE').waitFor();
    await page.locator('section[aria-labelledby="upcoming-title"] tbody tr').nth(4).waitFor();
    await page.getByRole('button', { name: 'Pause' }).click();
    await badge(page, '.settings', 'PAUSED').waitFor();
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    await view(page, '06-job-paused');
    await page.getByRole('button', { name: 'Resume' }).click();
    await badge(page, '.settings', 'DUE').waitFor();
    await page.getByRole('button', { name: 'Pause' }).waitFor();
  });

  test('the jobs list filters by state and by name (the API filters, across pages)', async () => {
    await page.getByRole('link', { name: 'Jobs', exact: true }).click();
    await page.getByRole('link', { name: 'held-call' }).waitFor();
    await page.getByLabel('State').selectOption('DUE');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('1 job on this page; creation order.').waitFor();
    await page.getByRole('link', { name: 'nightly-report' }).waitFor();
    await page.getByLabel('State').selectOption('');
    await page.getByLabel('Name').fill('held');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('1 job on this page whose name starts with "held"; creation order.').waitFor();
    await page.getByRole('link', { name: 'held-call' }).waitFor();
    await page.getByLabel('Name').fill('');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('2 jobs on this page; creation order.').waitFor();
    await view(page, '07-jobs');
  });

  test('one agents view shows the agents of both coordinators', async () => {
    await page.getByRole('link', { name: 'Agents' }).click();
    await page.locator('tr[data-agent="agent-on-c1"] .coordinator', { hasText: /^c1$/ }).waitFor();
    await page.locator('tr[data-agent="agent-on-c2"] .coordinator', { hasText: /^c2$/ }).waitFor();
    await page.getByText('2 agents on 2 coordinators').waitFor();
    await view(page, '08-agents');
  });

  test('the live view shows due-soon, running (and who holds it), lag and throughput', async () => {
    const api = restClient(c1.httpUrl, tokens['oncall']!);
    await api.createJob({ task: 'http', name: 'still-held', runAt: new Date().toISOString(), payload: { url: held.url('/second'), timeoutMs: 600_000 } });
    await held.arrived(2);
    await page.getByRole('link', { name: 'Live' }).click();
    const row = page.locator('section[aria-labelledby="running-title"] tr', { hasText: 'still-held' });
    await row.locator('td', { hasText: /^agent-on-c[12]$/ }).waitFor();
    await page.locator('.tile', { hasText: 'Due in the next minute' }).waitFor();
    await page.locator('.tile', { hasText: 'Throughput' }).locator('.tile-value', { hasText: /\/s$/ }).filter({ hasNotText: '…' }).waitFor();
    await page.getByRole('heading', { name: 'Running now' }).waitFor();
    await view(page, '09-live');
  });

  test('a reader token sees no action, on the other coordinator too', async () => {
    const readerContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    readerContext.setDefaultTimeout(STEP_MS);
    const reader = await readerContext.newPage();
    watch(reader);
    try {
      await reader.goto(`${c2.httpUrl}/ui/#/jobs/${heldJob}`);
      await signIn(reader, tokens['viewer']!);
      expect(await reader.locator('.whoami').textContent()).toBe('viewer · reader · namespace ops');
      await reader.getByRole('heading', { name: 'Job held-call' }).waitFor();
      await badge(reader, '.timeline', 'CANCELLED').waitFor();
      expect(await reader.locator('main button').count()).toBe(0);
      expect(await reader.getByRole('link', { name: 'New job' }).count()).toBe(0);
      await view(reader, '10-reader-job');
      await reader.getByRole('link', { name: 'Jobs', exact: true }).click();
      await reader.getByRole('link', { name: 'nightly-report' }).click();
      await reader.getByRole('heading', { name: 'Job nightly-report' }).waitFor();
      await badge(reader, '.settings', 'DUE').waitFor();
      expect(await reader.locator('main button').count()).toBe(0);
    } finally {
      await readerContext.close();
    }
    expect(problems).toEqual([]);
  });
});
