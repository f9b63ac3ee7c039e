/**
 * The Helm chart (deploy/helm/kairos), without a cluster: `helm lint --strict`,
 * `helm template` with several value sets, every rendered object checked by
 * kubeconform -strict against the committed schemas of Kubernetes 1.30 and of
 * the CRDs (tools/contract/support/k8s-schemas, no network), and the
 * behaviours a review asked for: selectors per release, restricted pods, no
 * replicas under KEDA, integers never in scientific notation, values.schema.json
 * refusing unknown keys and wrong types, the migration hook, and alerts and
 * queries that match deploy/prometheus/kairos-rules.yaml and the metrics a
 * coordinator exports. helm and kubeconform come from the Go module proxy
 * (tools/scripts/client-env.mjs).
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { clientEnv, ROOT } from './client-env';

const CHART = path.join(ROOT, 'deploy/helm/kairos');
const SCHEMAS = path.join(ROOT, 'tools/contract/support/k8s-schemas');
const KUBE_VERSION = '1.30.0';
const NAMESPACE = 'kairos-test';
const RELEASE = 'prod';

/** A rendered object: free-form YAML. */
type Manifest = Record<string, any>;
type Values = Record<string, unknown>;

const REQUIRED: Values = {
  image: { repository: 'registry.example.com/kairos' },
  database: { existingSecret: 'kairos-database' },
  agents: { defaults: { token: { existingSecret: 'kairos-agent-token' } } },
};
const KEDA_SERVER = 'http://prometheus-operated.monitoring:9090';

/** Value sets rendered (each on top of REQUIRED) and all checked by kubeconform. */
const SETS: Record<string, Values> = {
  defaults: {},
  keda: { agents: { defaults: { keda: { serverAddress: KEDA_SERVER } }, pools: [{ name: 'default', tasks: ['http', 'sleep'], keda: { enabled: true } }] } },
  twoPools: {
    agents: {
      defaults: { drainGraceMs: 3600000, keda: { serverAddress: KEDA_SERVER } },
      pools: [
        { name: 'web', tasks: ['http'], httpAllowHosts: ['api.example.com:443'], replicas: 3 },
        {
          name: 'reports',
          tasks: ['reports.daily', 'sleep'],
          capacity: 2,
          preDispatchQueue: 0,
          kairosNamespace: 'team-a',
          keda: { enabled: true, minReplicas: 0, threshold: 5 },
          podAnnotations: { note: `say "hi": it's {{ quoted }}` },
          extraEnv: [{ name: 'NOTE', value: `a "quoted" value: with # and 'both'` }],
        },
      ],
    },
  },
  migrations: { migrations: { enabled: true, databaseSecret: { name: 'kairos-database-ddl' } } },
  monitoring: {
    monitoring: { serviceMonitor: { enabled: true, labels: { release: 'prom' } }, prometheusRule: { enabled: true, alertLabels: { team: 'platform' } } },
    networkPolicy: {
      enabled: true,
      coordinator: { ingressFrom: [{ namespaceSelector: { matchLabels: { 'kairos-client': 'true' } } }] },
      agents: { extraEgress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0' } }], ports: [{ port: 443, protocol: 'TCP' }] }] },
    },
  },
  headless: { coordinator: { headlessService: { enabled: true } }, agents: { useHeadlessService: true } },
  tls: {
    tls: { enabled: true, certSecret: 'kairos-coordinator-tls', caSecret: 'kairos-ca', clientAuth: true, agentCertSecret: 'kairos-agent-tls' },
    monitoring: { serviceMonitor: { enabled: true, tlsConfig: { insecureSkipVerify: true } } },
  },
  everything: {
    image: { repository: 'registry.example.com/kairos', digest: `sha256:${'ab'.repeat(32)}` },
    imagePullSecrets: [{ name: 'regcred' }],
    commonLabels: { team: 'platform' },
    migrations: { enabled: true, databaseSecret: { name: 'kairos-database-ddl' } },
    tls: { enabled: true, certSecret: 'kairos-coordinator-tls', caSecret: 'kairos-ca' },
    coordinator: {
      headlessService: { enabled: true },
      pdb: { minAvailable: 1 },
      extraEnv: [{ name: 'KAIROS_DB_POOL_SIZE', value: '20' }],
      extraVolumes: [{ name: 'extra', configMap: { name: 'kairos-extra' } }],
      extraVolumeMounts: [{ name: 'extra', mountPath: '/etc/extra', readOnly: true }],
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'kairos', effect: 'NoSchedule' }],
      priorityClassName: 'high',
    },
    agents: {
      useHeadlessService: true,
      defaults: { keda: { serverAddress: KEDA_SERVER } },
      pools: [
        { name: 'default', tasks: ['http', 'sleep'], keda: { enabled: true } },
        { name: 'batch', tasks: ['exec'], execAllow: ['/usr/bin/backup'], envFrom: [{ secretRef: { name: 'batch-env' } }], keda: { enabled: false } },
      ],
    },
    monitoring: { serviceMonitor: { enabled: true }, prometheusRule: { enabled: true, disabled: ['KairosOccurrencesMissed'] }, podScrapeAnnotations: true },
    networkPolicy: { enabled: true, coordinator: { metricsFrom: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }] } },
  },
};

interface Finished {
  code: number;
  stdout: string;
  stderr: string;
}

let scratch: string;
let helmBin: string;
let kubeconformBin: string;
let helmEnv: Record<string, string>;
const rendered = new Map<string, Manifest[]>();
const releaseOf = new Map<string, string>();
const renderedText = new Map<string, string>();
const renderedFiles: string[] = [];

function run(command: string, args: string[], env: Record<string, string> = {}): Promise<Finished> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: ROOT, env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

let fileCount = 0;
/** A values file, written as YAML: numbers reach Helm as a user's file gives them (float64). */
function valuesFile(values: Values): string {
  const file = path.join(scratch, `values-${++fileCount}.yaml`);
  writeFileSync(file, stringify(values));
  return file;
}

function helm(args: string[]): Promise<Finished> {
  return run(helmBin, args, helmEnv);
}

function template(sets: Values[], release = RELEASE, extra: string[] = []): Promise<Finished> {
  const files = sets.flatMap((values) => ['-f', valuesFile(values)]);
  return helm(['template', release, CHART, '--namespace', NAMESPACE, '--kube-version', KUBE_VERSION, ...files, ...extra]);
}

function documents(text: string): Manifest[] {
  return parseAllDocuments(text)
    .map((document) => document.toJS() as Manifest | null)
    .filter((document): document is Manifest => document !== null && typeof document === 'object');
}

async function render(name: string, values: Values, release = RELEASE): Promise<Manifest[]> {
  const done = await template([REQUIRED, values], release);
  if (done.code !== 0) throw new Error(`helm template (${name}) failed:\n${done.stderr}`);
  const file = path.join(scratch, `rendered-${name}.yaml`);
  writeFileSync(file, done.stdout);
  renderedFiles.push(file);
  renderedText.set(name, done.stdout);
  releaseOf.set(name, release);
  const manifests = documents(done.stdout);
  rendered.set(name, manifests);
  return manifests;
}

const of = (manifests: Manifest[], kind: string): Manifest[] => manifests.filter((manifest) => manifest.kind === kind);
const named = (manifests: Manifest[], kind: string, name: string): Manifest => {
  const found = manifests.find((manifest) => manifest.kind === kind && manifest.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in ${manifests.map((manifest) => `${manifest.kind}/${manifest.metadata.name}`).join(', ')}`);
  return found;
};

/** Pod specs of an object (Deployment, Job, Pod), with the labels the pod gets. */
function podsOf(manifest: Manifest): Array<{ spec: Manifest; labels: Record<string, string> }> {
  if (manifest.kind === 'Pod') return [{ spec: manifest.spec, labels: manifest.metadata.labels }];
  if (manifest.kind === 'Deployment' || manifest.kind === 'Job') return [{ spec: manifest.spec.template.spec, labels: manifest.spec.template.metadata.labels }];
  return [];
}

function envOf(container: Manifest): Record<string, Manifest> {
  return Object.fromEntries((container.env ?? []).map((variable: Manifest) => [variable.name, variable]));
}

const coordinatorName = (release = RELEASE) => `${release}-kairos-coordinator`;
const poolName = (pool: string, release = RELEASE) => `${release}-kairos-agent-${pool}`;

beforeAll(async () => {
  const env = await clientEnv();
  helmBin = path.join(env.goBin, 'helm');
  kubeconformBin = path.join(env.goBin, 'kubeconform');
  scratch = mkdtempSync(path.join(os.tmpdir(), 'kairos-helm-'));
  // helm reads and writes nothing of the user's own configuration.
  helmEnv = { HELM_CONFIG_HOME: path.join(scratch, 'config'), HELM_CACHE_HOME: path.join(scratch, 'cache'), HELM_DATA_HOME: path.join(scratch, 'data') };
  for (const folder of Object.values(helmEnv)) mkdirSync(folder, { recursive: true });
  await Promise.all(Object.entries(SETS).map(([name, values]) => render(name, values)));
  // The longest release name Helm accepts (53), and the longest full name.
  await render('longRelease', SETS.everything!, 'r'.repeat(53));
  await render('longFullname', { ...SETS.everything, fullnameOverride: 'f'.repeat(63) });
  // A second release of the same values in the same namespace.
  await render('otherRelease', SETS.twoPools!, 'staging');
}, 120_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('the Helm chart', () => {
  test('helm lint --strict passes with the required values', async () => {
    const done = await helm(['lint', CHART, '--strict', '--kube-version', KUBE_VERSION, '-f', valuesFile(REQUIRED)]);
    expect(done.stdout + done.stderr).not.toMatch(/\[(WARNING|ERROR)\]/);
    expect(done.code).toBe(0);
  });

  test('every rendered object is valid for Kubernetes 1.30 and the CRDs (kubeconform -strict, committed schemas)', async () => {
    expect(renderedFiles.length).toBe(Object.keys(SETS).length + 3);
    const done = await run(kubeconformBin, [
      '-strict',
      '-summary',
      '-kubernetes-version',
      KUBE_VERSION,
      '-schema-location',
      `${SCHEMAS}/{{ .ResourceKind }}{{ .KindSuffix }}.json`,
      ...renderedFiles,
    ]);
    if (done.code !== 0) throw new Error(`kubeconform failed:\n${done.stdout}${done.stderr}`);
    expect(done.stdout).toMatch(/Invalid: 0, Errors: 0, Skipped: 0/);
    // Every kind the chart can render was checked at least once.
    const kinds = new Set([...rendered.values()].flat().map((manifest) => manifest.kind));
    expect([...kinds].sort()).toEqual(
      ['Deployment', 'Job', 'NetworkPolicy', 'Pod', 'PodDisruptionBudget', 'PrometheusRule', 'ScaledObject', 'Service', 'ServiceAccount', 'ServiceMonitor'].sort(),
    );
  });

  test('names fit in 63 characters and never collide, even for the longest release and full names', () => {
    for (const [set, manifests] of rendered) {
      const names = manifests.map((manifest) => `${manifest.kind}/${manifest.metadata.name}`);
      expect({ set, duplicates: names.filter((name, index) => names.indexOf(name) !== index) }).toEqual({ set, duplicates: [] });
      for (const manifest of manifests) {
        expect({ set, name: manifest.metadata.name, fits: manifest.metadata.name.length <= 63 }).toEqual({ set, name: manifest.metadata.name, fits: true });
        for (const [key, value] of Object.entries(manifest.metadata.labels ?? {})) {
          expect({ key, fits: String(value).length <= 63 }).toEqual({ key, fits: true });
        }
      }
    }
    const long = rendered.get('longRelease')!;
    expect(of(long, 'Deployment').map((manifest) => manifest.metadata.name.length)).toEqual([63, 63, 63]);
  });

  test('objects carry the recommended labels; selectors only name, instance, component (and the pool)', () => {
    const selectorKeys = ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/component', 'kairos/pool'];
    for (const [set, manifests] of rendered) {
      const release = releaseOf.get(set)!;
      for (const manifest of manifests) {
        const labels = manifest.metadata.labels;
        for (const key of ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/version', 'app.kubernetes.io/part-of', 'app.kubernetes.io/managed-by', 'helm.sh/chart']) {
          expect({ object: `${set}: ${manifest.kind}/${manifest.metadata.name}`, key, present: key in labels }).toEqual({
            object: `${set}: ${manifest.kind}/${manifest.metadata.name}`,
            key,
            present: true,
          });
        }
        expect(labels['app.kubernetes.io/instance']).toBe(release);
      }
      for (const deployment of of(manifests, 'Deployment')) {
        const selector = deployment.spec.selector.matchLabels as Record<string, string>;
        expect(selector['app.kubernetes.io/instance']).toBe(release);
        expect(Object.keys(selector).every((key) => selectorKeys.includes(key))).toBe(true);
        for (const [key, value] of Object.entries(selector)) expect(deployment.spec.template.metadata.labels[key]).toBe(value);
      }
      for (const pdb of of(manifests, 'PodDisruptionBudget')) {
        expect(pdb.spec.selector.matchLabels['app.kubernetes.io/instance']).toBe(release);
      }
      for (const service of of(manifests, 'Service')) expect(service.spec.selector['app.kubernetes.io/instance']).toBe(release);
    }
  });

  test('two releases in one namespace do not select each other’s pods', () => {
    const other = rendered.get('otherRelease')!;
    const mine = rendered.get('twoPools')!;
    const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([key, value]) => labels[key] === value);
    const selectors = (manifests: Manifest[]) => [
      ...of(manifests, 'Deployment').map((manifest) => manifest.spec.selector.matchLabels),
      ...of(manifests, 'PodDisruptionBudget').map((manifest) => manifest.spec.selector.matchLabels),
      ...of(manifests, 'Service').map((manifest) => manifest.spec.selector),
    ];
    const pods = (manifests: Manifest[]) => manifests.flatMap(podsOf).map((pod) => pod.labels);
    for (const selector of selectors(mine)) for (const labels of pods(other)) expect(matches(selector, labels)).toBe(false);
    for (const selector of selectors(other)) for (const labels of pods(mine)) expect(matches(selector, labels)).toBe(false);
    // Pools of one release do not select each other's pods either.
    const [web, reports] = [named(mine, 'Deployment', poolName('web')), named(mine, 'Deployment', poolName('reports'))];
    expect(matches(web.spec.selector.matchLabels, reports.spec.template.metadata.labels)).toBe(false);
  });

  test('every pod meets the restricted Pod Security Standard and writes only to /tmp', () => {
    for (const [set, manifests] of rendered) {
      const pods = manifests.flatMap(podsOf);
      expect(pods.length).toBeGreaterThan(0);
      for (const { spec } of pods) {
        expect({ set, securityContext: spec.securityContext }).toEqual({
          set,
          securityContext: { runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, fsGroup: 10001, seccompProfile: { type: 'RuntimeDefault' } },
        });
        expect(spec.automountServiceAccountToken).toBe(false);
        expect(spec.enableServiceLinks).toBe(false);
        expect(spec.hostNetwork ?? false).toBe(false);
        for (const container of [...(spec.initContainers ?? []), ...spec.containers]) {
          expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
          expect(container.securityContext.privileged ?? false).toBe(false);
          expect(container.securityContext.capabilities.add ?? []).toEqual([]);
          const tmp = container.volumeMounts.find((mount: Manifest) => mount.mountPath === '/tmp');
          expect(spec.volumes.find((volume: Manifest) => volume.name === tmp.name).emptyDir).toBeDefined();
        }
      }
    }
  });

  test('the image: repository@digest when a digest is given, else repository:appVersion; the CLI command as args', () => {
    const chart = parse(readFileSync(path.join(CHART, 'Chart.yaml'), 'utf8')) as { appVersion: string; kubeVersion: string };
    expect(chart.kubeVersion).toBe('>=1.25.0-0');
    const images = (manifests: Manifest[]) => new Set(manifests.flatMap(podsOf).flatMap((pod) => pod.spec.containers.map((container: Manifest) => container.image)));
    expect([...images(rendered.get('defaults')!)]).toEqual([`registry.example.com/kairos:${chart.appVersion}`]);
    expect([...images(rendered.get('everything')!)]).toEqual([`registry.example.com/kairos@sha256:${'ab'.repeat(32)}`]);
    const manifests = rendered.get('everything')!;
    expect(named(manifests, 'Deployment', coordinatorName()).spec.template.spec.containers[0].args).toEqual(['coordinator']);
    expect(named(manifests, 'Deployment', poolName('default')).spec.template.spec.containers[0].args).toEqual(['agent']);
    expect(named(manifests, 'Job', `${RELEASE}-kairos-migrate`).spec.template.spec.containers[0].args).toEqual(['migrate']);
  });

  test('probes: coordinators on /healthz and /readyz, agents on their health port', () => {
    const manifests = rendered.get('defaults')!;
    const coordinator = named(manifests, 'Deployment', coordinatorName()).spec.template.spec.containers[0];
    expect(coordinator.startupProbe.httpGet).toEqual({ path: '/healthz', port: 'http', scheme: 'HTTP' });
    expect(coordinator.startupProbe.failureThreshold * coordinator.startupProbe.periodSeconds).toBeGreaterThanOrEqual(300);
    expect(coordinator.readinessProbe.httpGet.path).toBe('/readyz');
    expect(coordinator.livenessProbe.httpGet.path).toBe('/healthz');
    const agent = named(manifests, 'Deployment', poolName('default')).spec.template.spec.containers[0];
    expect(agent.ports).toEqual([{ name: 'health', containerPort: 8081, protocol: 'TCP' }]);
    expect(envOf(agent).KAIROS_AGENT_HEALTH_PORT!.value).toBe('8081');
    expect([agent.startupProbe.httpGet.path, agent.readinessProbe.httpGet.path, agent.livenessProbe.httpGet.path]).toEqual(['/livez', '/readyz', '/livez']);
    expect(agent.readinessProbe.httpGet.port).toBe('health');
    // Under TLS the REST port (and so the probes) speak HTTPS.
    const tls = named(rendered.get('tls')!, 'Deployment', coordinatorName()).spec.template.spec.containers[0];
    expect(tls.readinessProbe.httpGet.scheme).toBe('HTTPS');
  });

  test('termination grace outlasts the coordinator shutdown grace and the agent drain grace (integers, never 3.6e+06)', () => {
    for (const [set, manifests] of rendered) {
      expect({ set, scientific: renderedText.get(set)!.match(/\b\d+(\.\d+)?e[+-]\d+\b/g) }).toEqual({ set, scientific: null });
      for (const deployment of of(manifests, 'Deployment')) {
        const spec = deployment.spec.template.spec;
        const env = envOf(spec.containers[0]);
        const graceMs = Number((env.KAIROS_SHUTDOWN_GRACE_MS ?? env.KAIROS_DRAIN_GRACE_MS)!.value);
        expect(Number.isInteger(spec.terminationGracePeriodSeconds)).toBe(true);
        expect(spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(graceMs);
      }
    }
    const web = named(rendered.get('twoPools')!, 'Deployment', poolName('web')).spec.template.spec;
    expect(envOf(web.containers[0]).KAIROS_DRAIN_GRACE_MS!.value).toBe('3600000');
    expect(web.terminationGracePeriodSeconds).toBe(3615);
  });

  test('values with quotes, colons and braces come through unchanged', () => {
    const reports = named(rendered.get('twoPools')!, 'Deployment', poolName('reports'));
    expect(reports.spec.template.metadata.annotations.note).toBe(`say "hi": it's {{ quoted }}`);
    expect(envOf(reports.spec.template.spec.containers[0]).NOTE!.value).toBe(`a "quoted" value: with # and 'both'`);
  });

  test('agents: one Deployment per pool with its tasks, capacity, token and allow-lists', () => {
    const manifests = rendered.get('twoPools')!;
    const web = envOf(named(manifests, 'Deployment', poolName('web')).spec.template.spec.containers[0]);
    expect(web.KAIROS_AGENT_TASKS!.value).toBe('http');
    expect(web.KAIROS_HTTP_ALLOW_HOSTS!.value).toBe('api.example.com:443');
    expect(web.KAIROS_AGENT_CAPACITY!.value).toBe('8');
    // Unset: the agent's own default.
    expect(web.KAIROS_PREDISPATCH_QUEUE).toBeUndefined();
    expect(web.KAIROS_TOKEN!.valueFrom).toEqual({ secretKeyRef: { name: 'kairos-agent-token', key: 'token' } });
    expect(web.KAIROS_COORDINATOR!.value).toBe(`${coordinatorName()}.${NAMESPACE}.svc:50051`);
    expect(web.KAIROS_AGENT_ID!.valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.name' } });
    const reports = envOf(named(manifests, 'Deployment', poolName('reports')).spec.template.spec.containers[0]);
    expect(reports.KAIROS_AGENT_TASKS!.value).toBe('reports.daily,sleep');
    expect(reports.KAIROS_AGENT_CAPACITY!.value).toBe('2');
    expect(reports.KAIROS_PREDISPATCH_QUEUE!.value).toBe('0');
    expect(of(manifests, 'PodDisruptionBudget').map((pdb) => pdb.metadata.name).sort()).toEqual([coordinatorName(), poolName('reports'), poolName('web')].sort());
    const exec = envOf(named(rendered.get('everything')!, 'Deployment', poolName('batch')).spec.template.spec.containers[0]);
    expect(exec.KAIROS_EXEC_ALLOW!.value).toBe('/usr/bin/backup');
  });

  test('KEDA: a scaled pool has no replicas field, and its query is limited to this release and the pool’s tasks', () => {
    const manifests = rendered.get('twoPools')!;
    expect(named(manifests, 'Deployment', poolName('web')).spec.replicas).toBe(3);
    expect('replicas' in named(manifests, 'Deployment', poolName('reports')).spec).toBe(false);
    expect('replicas' in named(rendered.get('keda')!, 'Deployment', poolName('default')).spec).toBe(false);
    const [scaled] = of(manifests, 'ScaledObject');
    expect(of(manifests, 'ScaledObject')).toHaveLength(1);
    expect(scaled!.spec.scaleTargetRef).toEqual({ name: poolName('reports') });
    expect(scaled!.spec.minReplicaCount).toBe(0);
    expect(scaled!.spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds).toBe(600);
    const trigger = scaled!.spec.triggers[0];
    expect(trigger.type).toBe('prometheus');
    expect(trigger.metadata).toMatchObject({ serverAddress: KEDA_SERVER, threshold: '5', activationThreshold: '0' });
    // The task is a regular expression: its dot escaped, and the backslash escaped again in the PromQL string.
    expect(trigger.metadata.query).toBe(
      `sum(max by (exported_namespace, task) (kairos_jobs_demand{namespace="${NAMESPACE}",service="${coordinatorName()}",exported_namespace="team-a",task=~"reports\\\\.daily|sleep"}))`,
    );
    // The threshold defaults to the pool's capacity; the coordinators get the demand horizon.
    const keda = rendered.get('keda')!;
    expect(of(keda, 'ScaledObject')[0]!.spec.triggers[0].metadata.threshold).toBe('8');
    expect(envOf(named(keda, 'Deployment', coordinatorName()).spec.template.spec.containers[0]).KAIROS_DEMAND_HORIZON_MS!.value).toBe('300000');
  });

  test('values.schema.json refuses unknown keys and wrong types, and a missing image.repository is named', async () => {
    const refused = async (values: Values, message: RegExp) => {
      const done = await template([REQUIRED, values]);
      expect(done.code).not.toBe(0);
      expect(done.stderr).toMatch(message);
    };
    await refused({ coordinator: { replicass: 3 } }, /additional properties 'replicass' not allowed/);
    await refused({ coordinator: { replicas: 'two' } }, /\/coordinator\/replicas.*want integer/);
    await refused({ agents: { pools: [{ name: 'a', keda: { enabld: true } }] } }, /additional properties 'enabld' not allowed/);
    await refused({ agents: { pools: [{ name: 'Bad_Name' }] } }, /\/agents\/pools\/0\/name/);
    await refused({ agents: { defaults: { drainGraceMs: 1.5 } } }, /drainGraceMs.*want integer/);
    await refused({ monitoring: { prometheusRule: { disabled: ['NoSuchAlert'] } } }, /disabled/);
    const done = await template([{ database: { existingSecret: 'db' }, agents: { defaults: { token: { existingSecret: 'tok' } } } }]);
    expect(done.code).not.toBe(0);
    expect(done.stderr).toMatch(/image\.repository is required/);
    const noDatabase = await template([{ image: { repository: 'r/kairos' }, agents: { defaults: { token: { existingSecret: 'tok' } } } }]);
    expect(noDatabase.stderr).toMatch(/database\.existingSecret is required/);
    const noServer = await template([REQUIRED, { agents: { pools: [{ name: 'a', keda: { enabled: true } }] } }]);
    expect(noServer.stderr).toMatch(/keda\.serverAddress is required/);
    const twice = await template([REQUIRED, { agents: { pools: [{ name: 'a' }, { name: 'a' }] } }]);
    expect(twice.stderr).toMatch(/the name "a" is used twice/);
  });

  test('the migration hook runs `kairos migrate` with its own secret, and coordinators then never migrate', () => {
    const manifests = rendered.get('migrations')!;
    const job = named(manifests, 'Job', `${RELEASE}-kairos-migrate`);
    expect(job.metadata.annotations['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    expect(job.metadata.annotations['helm.sh/hook-delete-policy']).toBe('before-hook-creation,hook-succeeded');
    expect(job.metadata.annotations['helm.sh/hook-weight']).toMatch(/^-?\d+$/);
    const container = job.spec.template.spec.containers[0];
    expect(envOf(container).DATABASE_URL!.valueFrom).toEqual({ secretKeyRef: { name: 'kairos-database-ddl', key: 'url' } });
    // A pre-install hook runs before the release's service account exists.
    expect(job.spec.template.spec.serviceAccountName).toBeUndefined();
    expect(job.spec.template.spec.restartPolicy).toBe('Never');
    const coordinator = envOf(named(manifests, 'Deployment', coordinatorName()).spec.template.spec.containers[0]);
    expect(coordinator.KAIROS_MIGRATE!.value).toBe('false');
    expect(coordinator.DATABASE_URL!.valueFrom).toEqual({ secretKeyRef: { name: 'kairos-database', key: 'url' } });
    const plain = rendered.get('defaults')!;
    expect(of(plain, 'Job')).toEqual([]);
    expect(envOf(named(plain, 'Deployment', coordinatorName()).spec.template.spec.containers[0]).KAIROS_MIGRATE).toBeUndefined();
  });

  test('headless Service: agents dial dns:/// over it, and the ServiceMonitor does not scrape it', () => {
    const manifests = rendered.get('everything')!;
    const headless = named(manifests, 'Service', `${RELEASE}-kairos-coordinator-headless`);
    expect(headless.spec.clusterIP).toBe('None');
    expect(headless.spec.publishNotReadyAddresses).toBe(false);
    const agent = envOf(named(manifests, 'Deployment', poolName('default')).spec.template.spec.containers[0]);
    expect(agent.KAIROS_COORDINATOR!.value).toBe(`dns:///${RELEASE}-kairos-coordinator-headless.${NAMESPACE}.svc:50051`);
    const monitor = of(manifests, 'ServiceMonitor')[0]!;
    const selects = (service: Manifest) =>
      Object.entries(monitor.spec.selector.matchLabels).every(([key, value]) => service.metadata.labels[key] === value) &&
      monitor.spec.selector.matchExpressions.every((expression: Manifest) => expression.operator === 'DoesNotExist' && !(expression.key in service.metadata.labels));
    expect(of(manifests, 'Service').filter(selects).map((service) => service.metadata.name)).toEqual([coordinatorName()]);
    const coordinator = envOf(named(manifests, 'Deployment', coordinatorName()).spec.template.spec.containers[0]);
    expect(coordinator.KAIROS_REBALANCE!.value).toBe('true');
  });

  test('TLS: coordinators serve with the mounted pair, agents trust the CA and present their own pair', () => {
    const manifests = rendered.get('tls')!;
    const coordinator = envOf(named(manifests, 'Deployment', coordinatorName()).spec.template.spec.containers[0]);
    expect([coordinator.KAIROS_TLS_CERT!.value, coordinator.KAIROS_TLS_KEY!.value, coordinator.KAIROS_TLS_CLIENT_CA!.value]).toEqual([
      '/etc/kairos/tls/tls.crt',
      '/etc/kairos/tls/tls.key',
      '/etc/kairos/client-ca/ca.crt',
    ]);
    const agent = envOf(named(manifests, 'Deployment', poolName('default')).spec.template.spec.containers[0]);
    expect(agent.KAIROS_TLS!.value).toBe('true');
    expect([agent.KAIROS_TLS_CA!.value, agent.KAIROS_TLS_CLIENT_CERT!.value, agent.KAIROS_TLS_CLIENT_KEY!.value]).toEqual([
      '/etc/kairos/ca/ca.crt',
      '/etc/kairos/client/tls.crt',
      '/etc/kairos/client/tls.key',
    ]);
    expect(of(manifests, 'ServiceMonitor')[0]!.spec.endpoints[0].scheme).toBe('https');
    const test = of(manifests, 'Pod')[0]!;
    expect(envOf(test.spec.containers[0]).KAIROS_READYZ_URL!.value).toBe(`https://${coordinatorName()}.${NAMESPACE}.svc:8080/readyz`);
  });

  test('NetworkPolicy: agents reach the coordinators’ gRPC port and DNS; coordinators admit agents and the listed peers', () => {
    const manifests = rendered.get('monitoring')!;
    const agents = named(manifests, 'NetworkPolicy', `${RELEASE}-kairos-agent`);
    expect(agents.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    const egressPorts = agents.spec.egress.flatMap((rule: Manifest) => (rule.ports ?? []).map((port: Manifest) => `${port.protocol}/${port.port}`));
    expect(egressPorts).toEqual(expect.arrayContaining(['TCP/50051', 'UDP/53', 'TCP/53', 'TCP/443']));
    const coordinator = named(manifests, 'NetworkPolicy', coordinatorName());
    const fromAgents = coordinator.spec.ingress.find((rule: Manifest) => rule.from[0].podSelector?.matchLabels['app.kubernetes.io/component'] === 'agent');
    expect(fromAgents.from[0].podSelector.matchLabels['app.kubernetes.io/instance']).toBe(RELEASE);
    expect(coordinator.spec.ingress.some((rule: Manifest) => rule.from[0].namespaceSelector?.matchLabels['kairos-client'] === 'true')).toBe(true);
  });

  test('the PrometheusRule has the alerts of deploy/prometheus/kairos-rules.yaml, limited to this release', () => {
    interface Rule {
      alert: string;
      expr: string;
      for?: string;
      labels: Record<string, string>;
      annotations: Record<string, string>;
    }
    const file = parse(readFileSync(path.join(ROOT, 'deploy/prometheus/kairos-rules.yaml'), 'utf8')) as { groups: Array<{ rules: Rule[] }> };
    const expected = file.groups.flatMap((group) => group.rules);
    const rule = of(rendered.get('monitoring')!, 'PrometheusRule')[0]!;
    const actual = (rule.spec.groups as Array<{ rules: Rule[] }>).flatMap((group) => group.rules);
    const matchers = `namespace="${NAMESPACE}",service="${coordinatorName()}"`;
    // Every metric the chart's alerts read is limited to this release.
    for (const { expr } of actual) {
      for (const match of expr.matchAll(/\bkairos_[a-z0-9_]+(\{[^}]*\})?/g)) expect(match[1] ?? '').toContain(`{${matchers}`);
    }
    const normalize = (text: string) =>
      text
        .replaceAll(`${matchers},`, '')
        .replaceAll(matchers, '')
        .replaceAll('{}', '')
        .replaceAll('exported_namespace', 'namespace')
        .replace(/\s+/g, ' ')
        .trim();
    const shape = (rules: Rule[]) =>
      rules.map((entry) => ({
        alert: entry.alert,
        expr: normalize(entry.expr),
        for: entry.for,
        severity: entry.labels.severity,
        summary: normalize(entry.annotations.summary!),
        description: entry.annotations.description,
      }));
    expect(shape(actual)).toEqual(shape(expected));
    expect(actual.every((entry) => entry.labels.team === 'platform')).toBe(true);
    // An alert can be left out by name.
    const fewer = of(rendered.get('everything')!, 'PrometheusRule')[0]!.spec.groups[0].rules.map((entry: Rule) => entry.alert);
    expect(fewer).toEqual(expected.map((entry) => entry.alert).filter((name) => name !== 'KairosOccurrencesMissed'));
  });

  test('every metric the chart queries is one a coordinator exports', () => {
    const source = readFileSync(path.join(ROOT, 'apps/coordinator/src/metrics.ts'), 'utf8');
    const exported = new Set<string>();
    for (const match of source.matchAll(/new (Counter|Gauge|Histogram|Summary)(?:<[^>]*>)?\(\{\s*name:\s*'(kairos_[a-z0-9_]+)'/g)) {
      const [, type, name] = match as unknown as [string, string, string];
      exported.add(name);
      if (type === 'Histogram') for (const suffix of ['_bucket', '_sum', '_count']) exported.add(`${name}${suffix}`);
    }
    expect(exported).toContain('kairos_jobs_dead_total');
    const queries = [...rendered.values()].flat().flatMap((manifest) => {
      if (manifest.kind === 'PrometheusRule') return manifest.spec.groups.flatMap((group: Manifest) => group.rules.map((entry: Manifest) => entry.expr as string));
      if (manifest.kind === 'ScaledObject') return manifest.spec.triggers.map((trigger: Manifest) => trigger.metadata.query as string);
      return [];
    });
    expect(queries.length).toBeGreaterThan(10);
    const named = new Set(queries.flatMap((query) => query.match(/\bkairos_[a-z0-9_]+/g) ?? []));
    expect(named).toContain('kairos_jobs_demand');
    expect([...named].filter((name) => !exported.has(name))).toEqual([]);
  });

  test('NOTES.txt renders: addresses, each pool, and a warning when KEDA has no ServiceMonitor to read', async () => {
    // helm template leaves NOTES.txt out: a copy of the chart renders it as a value.
    const copy = path.join(scratch, 'chart-notes');
    cpSync(CHART, copy, { recursive: true });
    const notes = readFileSync(path.join(CHART, 'templates/NOTES.txt'), 'utf8');
    writeFileSync(
      path.join(copy, 'templates/notes-check.yaml'),
      `{{- define "kairos.notesCheck" }}${notes}{{- end }}\nnotes: {{ include "kairos.notesCheck" . | toJson }}\n`,
    );
    const notesOf = async (values: Values) => {
      const done = await helm(['template', RELEASE, copy, '--namespace', NAMESPACE, '--kube-version', KUBE_VERSION, '-f', valuesFile(REQUIRED), '-f', valuesFile(values), '--show-only', 'templates/notes-check.yaml']);
      if (done.code !== 0) throw new Error(`NOTES.txt did not render:\n${done.stderr}`);
      return (parse(done.stdout) as { notes: string }).notes;
    };
    const plain = await notesOf(SETS.keda!);
    expect(plain).toContain(`${coordinatorName()}.${NAMESPACE}.svc:50051`);
    expect(plain).toContain(`${poolName('default')}: tasks http,sleep, capacity 8, 1 to 20 replicas (KEDA)`);
    expect(plain).toContain('WARNING: pool default scales with KEDA');
    const everything = await notesOf(SETS.everything!);
    expect(everything).toContain(`dns:///${RELEASE}-kairos-coordinator-headless.${NAMESPACE}.svc:50051`);
    expect(everything).toContain(`${poolName('batch')}: tasks exec, capacity 8, 2 replicas`);
    expect(everything).not.toContain('WARNING');
    expect(await notesOf(SETS.twoPools!)).toContain(`${poolName('web')}: tasks http, capacity 8, 3 replicas`);
    expect(await notesOf(SETS.monitoring!)).toContain('Prometheus cannot reach the coordinators');
  });

  test('helm test: a Pod of the Kairos image asks the coordinator Service for /readyz', () => {
    const [pod] = of(rendered.get('defaults')!, 'Pod');
    expect(pod!.metadata.annotations['helm.sh/hook']).toBe('test');
    const container = pod!.spec.containers[0];
    expect(container.image).toBe(named(rendered.get('defaults')!, 'Deployment', coordinatorName()).spec.template.spec.containers[0].image);
    expect(container.command.slice(0, 2)).toEqual(['node', '-e']);
    expect(envOf(container).KAIROS_READYZ_URL!.value).toBe(`http://${coordinatorName()}.${NAMESPACE}.svc:8080/readyz`);
  });
});
