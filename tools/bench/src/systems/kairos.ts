/**
 * Kairos as real processes: one coordinator (apps/coordinator/dist/main.js,
 * started by @kairos/testing) and N bench agents (kairos-agent.ts: the real
 * agent SDK over gRPC) with the workload's slots split between them.
 * Everything runs at Kairos's production defaults (lease 10 s, poll backstop
 * 1 s, claim batch 500, pool 10); only log verbosity is lowered.
 *
 * Variant `default` runs with --insecure, like the peers (which have no
 * authentication); `secure` (bench --secure) runs the production security
 * layer: agent and client tokens, TLS on both servers, and client
 * certificates required on gRPC (mTLS), with certificates made for the run.
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'pg';
import { createPool, createStore, leaseStatements, migrate } from '@kairos/store';
import { spawn } from 'node:child_process';
import { COORDINATOR_MAIN, makeTestPki, startCoordinatorProcess, type TestPki } from '@kairos/testing';
import { TASK_NOOP, UUID_V7_SQL } from '../common';
import { startWorkers, type WorkerProcess } from '../procs';
import { withClient } from '../cluster';
import type { Driver, JobBatch, RunningSystem, StartOptions } from './types';

const COORDINATOR_ENV = {
  // The coordinator's production defaults, written out (the test helper that
  // starts the process otherwise applies its short test lease and poll).
  KAIROS_LEASE_MS: '10000',
  KAIROS_POLL_INTERVAL_MS: '1000',
  KAIROS_RETRY_BASE_MS: '1000',
  KAIROS_CLAIM_BATCH: '500',
  KAIROS_DB_POOL_SIZE: '10',
  KAIROS_SHUTDOWN_GRACE_MS: '3000',
  // Authentication off: the bench compares scheduling cost with peers that have none.
  KAIROS_INSECURE: 'true',
  KAIROS_LOG_LEVEL: 'info',
  // Retention off, like the peers (which keep their rows); variant `retention` turns it on.
  KAIROS_RUN_RETENTION_MS: '0',
  KAIROS_JOB_RETENTION_MS: '0',
};

/**
 * Variant `retention` (bench --retention): runs and finished jobs older than a
 * day are deleted, a pass every second (ten times the default rate), so on a
 * database seeded with old runs deletion runs throughout the measurement.
 */
const RETENTION_ENV = { KAIROS_RUN_RETENTION_MS: '86400000', KAIROS_JOB_RETENTION_MS: '86400000', KAIROS_RETENTION_INTERVAL_MS: '1000' };

function coordinatorEnvOf(variant: StartOptions['variant']): Record<string, string> {
  return variant === 'retention' ? { ...COORDINATOR_ENV, ...RETENTION_ENV } : COORDINATOR_ENV;
}

export const kairosDriver: Driver = {
  system: 'kairos',

  async prepare(url) {
    const pool = createPool({ connectionString: url, max: 1 });
    try {
      await migrate(pool);
    } finally {
      await pool.end();
    }
  },

  async insert(url, batch) {
    // Direct SQL into `jobs` (the columns a one-off job created through the API
    // gets), ids UUIDv7 like the API's (uuidv7() on PostgreSQL 18, UUID_V7_SQL before it), in one statement per 250k rows.
    await withClient(url, async (client) => {
      const { rows } = await client.query(`SELECT current_setting('server_version_num')::int >= 180000 AS v7`);
      const idFn = rows[0]?.v7 ? 'uuidv7()' : UUID_V7_SQL;
      for (let done = 0; done < batch.count; done += 250_000) {
        const n = Math.min(250_000, batch.count - done);
        await client.query(
          `INSERT INTO jobs (id, task, run_at, occurrence_at, next_run_at, state, payload)
           SELECT ${idFn}, $1, t, t, t, 'DUE', jsonb_strip_nulls(jsonb_build_object('p', $2::int, 'd', dms, 's', $5::int))
           FROM (SELECT dms, to_timestamp(dms / 1000.0) AS t
                 FROM (SELECT ($3::bigint + floor(random() * $4::bigint))::bigint AS dms FROM generate_series(1, $6::int)) g) s`,
          [batch.task, batch.phase, batch.dueAtMs, Math.max(1, batch.spreadMs ?? 0), batch.sleepMs ?? null, n],
        );
      }
    });
  },

  async pending(pool) {
    const { rows } = await pool.query(
      `SELECT (SELECT count(*) FROM jobs WHERE state = 'CLAIMED')
            + (SELECT count(*) FROM jobs WHERE state = 'DUE' AND next_run_at <= now()) AS n`,
    );
    return Number(rows[0]?.n ?? 0);
  },

  async claimLags(pool, dueAtMs) {
    // A run's started_at is its claim's time (or its due instant, pre-dispatched); scheduled_for is the occurrence.
    const { rows } = await pool.query(
      `SELECT extract(epoch FROM (started_at - scheduled_for)) * 1000 AS lag FROM runs
       WHERE scheduled_for = to_timestamp($1::bigint / 1000.0) ORDER BY 1`,
      [dueAtMs],
    );
    return rows.map((row) => Number(row.lag));
  },

  async purgeDue(url) {
    await withClient(url, (client) => client.query(`DELETE FROM jobs WHERE state = 'DUE' AND next_run_at <= now()`));
  },

  describe(options) {
    return {
      processes: `1 coordinator + ${options.processes} agents`,
      agentCapacity: options.slotsPerProcess,
      coordinatorEnv:
        options.variant === 'secure'
          ? { ...COORDINATOR_ENV, KAIROS_INSECURE: 'false', KAIROS_TLS_CERT: '(run CA)', KAIROS_TLS_KEY: '(run CA)', KAIROS_TLS_CLIENT_CA: '(run CA)' }
          : coordinatorEnvOf(options.variant),
      ...(options.variant === 'secure' ? { agents: 'agent token, TLS with a client certificate (mTLS)' } : {}),
    };
  },

  async start(options: StartOptions): Promise<RunningSystem> {
    const security = options.variant === 'secure' ? await secureSetup(options.url) : undefined;
    const coordinatorEnv = { ...coordinatorEnvOf(options.variant), ...(security?.coordinatorEnv ?? {}) };
    const coordinator = options.profileDir
      ? await startProfiledCoordinator(options.url, `${options.label}-coordinator`, options.profileDir, coordinatorEnv)
      : await startCoordinatorProcess({
          databaseUrl: options.url,
          leaseMs: 10_000,
          name: `${options.label}-coordinator`,
          env: coordinatorEnv,
        });
    let agents: WorkerProcess[];
    try {
      agents = await startWorkers({
        count: options.processes,
        label: options.label,
        role: 'agent',
        script: 'kairos-agent',
        env: (name) => ({
          KAIROS_COORDINATOR: coordinator.grpcAddress,
          KAIROS_AGENT_ID: name,
          KAIROS_AGENT_TASKS: options.tasks.join(','),
          KAIROS_AGENT_CAPACITY: String(options.slotsPerProcess),
          KAIROS_DRAIN_GRACE_MS: '15000',
          ...(security?.agentEnv ?? {}),
          ...(options.trace ? { BENCH_TRACE: '1' } : {}),
        }),
        onMessage: options.collector.onMessage,
        profileDir: options.profileDir,
      });
    } catch (error: unknown) {
      await coordinator.proc.stop(5_000);
      throw error;
    }
    return {
      options: kairosDriver.describe(options),
      coordinatorPid: coordinator.proc.pid,
      coordinatorAddress: { grpc: coordinator.grpcAddress, http: coordinator.httpUrl },
      workerPids: () => agents.map((agent) => agent.pid),
      async scheduleOne(phase, dueAtMs) {
        const body = JSON.stringify({ runAt: new Date(dueAtMs).toISOString(), task: TASK_NOOP, payload: { p: phase, d: dueAtMs } });
        if (security) {
          await security.post(`${coordinator.httpUrl}/jobs`, body);
          return;
        }
        const response = await fetch(`${coordinator.httpUrl}/jobs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        if (response.status !== 201) throw new Error(`POST /jobs answered ${response.status}: ${await response.text()}`);
        await response.arrayBuffer().catch(() => undefined);
      },
      async stop() {
        await Promise.all(agents.map((agent) => agent.stop(20_000)));
        await coordinator.proc.stop(10_000);
      },
    };
  },

  async claim500(url, samples) {
    const pool = new Pool({ connectionString: url, max: 1 });
    // A forced DROP DATABASE may end an idle connection before end() completes; without a listener that crashes the bench.
    pool.on('error', () => undefined);
    const timings: number[] = [];
    try {
      for (let i = 0; i < samples + 1; i++) {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          // The store's own claimDue (the statement the dispatcher runs), on our transaction.
          const lease = leaseStatements(client as unknown as Pool);
          const t = performance.now();
          const claimed = await lease.claimDue({ namespace: 'default', tokenId: null, owner: 'bench-w6', tasks: [TASK_NOOP], limit: 500, leaseMs: 10_000 });
          const elapsed = performance.now() - t;
          if (claimed.length !== 500) throw new Error(`Kairos claim returned ${claimed.length} rows, expected 500`);
          if (i > 0) timings.push(elapsed); // the first sample warms the plan cache
        } finally {
          await client.query('ROLLBACK');
          client.release();
        }
      }
    } finally {
      await pool.end();
    }
    return timings;
  },
};

/**
 * --cpu-prof cannot go through NODE_OPTIONS, so a profiled coordinator is
 * spawned here with the flag on its command line (same entry point, same env).
 */
async function startProfiledCoordinator(databaseUrl: string, name: string, profileDir: string, coordinatorEnv: Record<string, string>) {
  const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profileDir}/${name}`, COORDINATOR_MAIN], {
    env: { ...process.env, ...coordinatorEnv, DATABASE_URL: databaseUrl, KAIROS_HOST: '127.0.0.1', KAIROS_HTTP_PORT: '0', KAIROS_GRPC_PORT: '0', KAIROS_COORDINATOR_ID: name },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`${name} did not become ready`)), 30_000);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        try {
          const parsed = JSON.parse(line) as Record<string, unknown>;
          if (parsed.msg === 'coordinator ready') {
            clearTimeout(timer);
            resolve(parsed);
          }
        } catch {
          // not JSON
        }
      }
    });
    child.stderr!.resume();
    void exited.then((code) => reject(new Error(`${name} exited (${code}) before it was ready`)));
  });
  return {
    httpUrl: String(ready.httpUrl),
    grpcAddress: String(ready.grpcAddress),
    proc: {
      pid: child.pid!,
      async stop(graceMs: number) {
        if (child.exitCode !== null || child.signalCode !== null) return exited;
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        const code = await exited;
        clearTimeout(timer);
        return code;
      },
    },
  };
}


let pki: TestPki | undefined;

/**
 * What the `secure` variant adds: certificates (made once per bench run), an
 * agent token and a writer token in the run's database, and the settings that
 * turn them on for the coordinator, the agents and scheduleOne.
 */
async function secureSetup(url: string) {
  pki ??= makeTestPki(path.join(os.tmpdir(), `kairos-bench-pki-${process.pid}`), 'bench');
  const store = createStore(createPool({ connectionString: url, max: 1 }));
  let agentToken: string;
  let writerToken: string;
  try {
    agentToken = (await store.tokens.create({ namespace: 'default', role: 'agent', name: 'bench agents' })).secret;
    writerToken = (await store.tokens.create({ namespace: 'default', role: 'writer', name: 'bench client' })).secret;
  } finally {
    await store.close();
  }
  const ca = pki.caCert;
  const agentOptions = new https.Agent({ keepAlive: true, ca: readFileSync(ca) });
  return {
    coordinatorEnv: {
      KAIROS_INSECURE: 'false',
      KAIROS_TLS_CERT: pki.serverCert,
      KAIROS_TLS_KEY: pki.serverKey,
      KAIROS_TLS_CLIENT_CA: pki.caCert,
    },
    agentEnv: {
      KAIROS_TOKEN: agentToken,
      KAIROS_TLS_CA: pki.caCert,
      KAIROS_TLS_CLIENT_CERT: pki.clientCert,
      KAIROS_TLS_CLIENT_KEY: pki.clientKey,
    },
    /** POST over https with the writer token; rejects unless 201. */
    post(target: string, body: string): Promise<void> {
      return new Promise((resolve, reject) => {
        const request = https.request(
          target,
          { method: 'POST', agent: agentOptions, headers: { 'content-type': 'application/json', authorization: `Bearer ${writerToken}` } },
          (response) => {
            let text = '';
            response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
            response.on('end', () => (response.statusCode === 201 ? resolve() : reject(new Error(`POST /jobs answered ${response.statusCode}: ${text}`))));
          },
        );
        request.on('error', reject);
        request.end(body);
      });
    },
  };
}
