#!/usr/bin/env node
// Makes the JSON schemas kubeconform checks the Helm chart against
// (tools/contract/support/k8s-schemas), offline afterwards: run once by hand
// when a version below changes, and commit the result.
//
//   node tools/scripts/k8s-schemas.mjs
//
// Sources, from the package registries only:
//   - Kubernetes built-in kinds: the PyPI package kubernetes-validate, which
//     ships the OpenAPI of each Kubernetes release as JSON schemas that share
//     one _definitions.json ("local-strict": additionalProperties false);
//   - CRDs: the CustomResourceDefinition YAMLs in the source of KEDA and of
//     the Prometheus Operator, from the Go module proxy (go mod download).
// Each output file is standalone (the definitions it reaches are copied into
// its own $defs), strict (an unknown field is an error) and named the way
// kubeconform looks a kind up: {kind}{-group prefix}-{version}.json, e.g.
// deployment-apps-v1.json, scaledobject-keda-v1alpha1.json. Descriptions are
// dropped: they are most of the bytes and validate nothing.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const out = path.join(root, 'tools/contract/support/k8s-schemas');

const KUBERNETES_VALIDATE = '1.37.0';
const KUBERNETES_VERSION = '1.30.0';
/** Built-in kinds the chart renders (kubeconform file names without .json). */
const BUILTIN = [
  'deployment-apps-v1',
  'service-v1',
  'serviceaccount-v1',
  'poddisruptionbudget-policy-v1',
  'networkpolicy-networking-v1',
  'job-batch-v1',
  'pod-v1',
];
/** CRDs: Go module, file in it, version of the CRD to take. */
const CRDS = [
  { module: 'github.com/kedacore/keda/v2@v2.21.0', file: 'config/crd/bases/keda.sh_scaledobjects.yaml', version: 'v1alpha1' },
  {
    module: 'github.com/prometheus-operator/prometheus-operator@v0.85.0',
    file: 'example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml',
    version: 'v1',
  },
  {
    module: 'github.com/prometheus-operator/prometheus-operator@v0.85.0',
    file: 'example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml',
    version: 'v1',
  },
];

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], ...options });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status})`);
  return result.stdout;
}

/** Schema keywords whose value is one schema, or a map or list of them. */
const ONE = ['items', 'additionalProperties', 'not'];
const MAP = ['properties', '$defs', 'patternProperties'];
const LIST = ['oneOf', 'anyOf', 'allOf'];

/** Applies `visit` to every schema node below `node` (children first), in place. */
function walk(node, visit) {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return;
  for (const key of ONE) if (node[key] && typeof node[key] === 'object') walk(node[key], visit);
  for (const key of MAP) if (node[key]) for (const child of Object.values(node[key])) walk(child, visit);
  for (const key of LIST) if (Array.isArray(node[key])) for (const child of node[key]) walk(child, visit);
  visit(node);
}

function dropDocs(node) {
  if (typeof node.description === 'string') delete node.description;
  for (const key of Object.keys(node)) if (key.startsWith('x-kubernetes-') || key === '$id') delete node[key];
}

/** A built-in kind, with the definitions it reaches copied in. */
function builtin(folder, name) {
  const definitions = JSON.parse(readFileSync(path.join(folder, '_definitions.json'), 'utf8')).$defs;
  const text = readFileSync(path.join(folder, `${name}.json`), 'utf8').replaceAll('"/api/_definitions.json#/$defs/', '"#/$defs/');
  const schema = JSON.parse(text);
  const defs = {};
  const pending = [...text.matchAll(/"#\/\$defs\/([^"]+)"/g)].map((match) => match[1]);
  while (pending.length > 0) {
    const ref = pending.pop();
    if (defs[ref]) continue;
    if (!definitions[ref]) throw new Error(`${name}: no definition ${ref}`);
    defs[ref] = structuredClone(definitions[ref]);
    for (const match of JSON.stringify(defs[ref]).matchAll(/"#\/\$defs\/([^"]+)"/g)) pending.push(match[1]);
  }
  schema.$defs = Object.fromEntries(Object.entries(defs).sort(([a], [b]) => a.localeCompare(b)));
  walk(schema, dropDocs);
  return schema;
}

/** A CRD's openAPIV3Schema as a strict JSON schema. */
function fromCrd(crd, version) {
  const served = crd.spec.versions.find((entry) => entry.name === version);
  if (!served) throw new Error(`${crd.metadata.name}: no version ${version}`);
  const schema = structuredClone(served.schema.openAPIV3Schema);
  walk(schema, (node) => {
    if (node['x-kubernetes-int-or-string'] === true) {
      delete node.type;
      node.oneOf = [{ type: 'string' }, { type: 'integer' }];
    }
    if (node.nullable === true) {
      node.type = [...new Set([...(Array.isArray(node.type) ? node.type : [node.type]), 'null'])];
    }
    delete node.nullable;
    const open = node['x-kubernetes-preserve-unknown-fields'] === true;
    if (node.type === 'object' && node.properties && node.additionalProperties === undefined && !open) node.additionalProperties = false;
    dropDocs(node);
  });
  const group = crd.spec.group;
  const kind = crd.spec.names.kind;
  schema.properties.apiVersion = { type: 'string', enum: [`${group}/${version}`] };
  schema.properties.kind = { type: 'string', enum: [kind] };
  // metadata is "type: object" in a CRD; name and the usual fields are checked as for built-in kinds.
  schema.properties.metadata = {
    type: 'object',
    additionalProperties: false,
    properties: {
      name: { type: 'string' },
      namespace: { type: 'string' },
      labels: { type: 'object', additionalProperties: { type: 'string' } },
      annotations: { type: 'object', additionalProperties: { type: 'string' } },
    },
  };
  schema.$schema = 'https://json-schema.org/draft/2020-12/schema';
  return { name: `${kind.toLowerCase()}-${group.split('.')[0]}-${version}`, schema };
}

function write(name, schema) {
  writeFileSync(path.join(out, `${name}.json`), `${JSON.stringify(schema, null, 1)}\n`);
  console.error(`wrote ${path.relative(root, out)}/${name}.json`);
}

const scratch = mkdtempSync(path.join(os.tmpdir(), 'kairos-k8s-schemas-'));
try {
  mkdirSync(out, { recursive: true });
  for (const file of readdirSync(out)) if (file.endsWith('.json')) rmSync(path.join(out, file));

  run('python3', ['-m', 'pip', 'download', '--quiet', '--no-deps', `kubernetes-validate==${KUBERNETES_VALIDATE}`, '-d', scratch]);
  const wheel = readdirSync(scratch).find((file) => file.endsWith('.whl'));
  run('python3', ['-m', 'zipfile', '-e', path.join(scratch, wheel), path.join(scratch, 'wheel')]);
  const folder = path.join(scratch, 'wheel/kubernetes_validate/kubernetes-json-schema', `v${KUBERNETES_VERSION}-local-strict`);
  for (const name of BUILTIN) write(name, builtin(folder, name));

  for (const { module, file, version } of CRDS) {
    const { Dir: dir } = JSON.parse(run('go', ['mod', 'download', '-json', module], { cwd: scratch }));
    const { name, schema } = fromCrd(parse(readFileSync(path.join(dir, file), 'utf8')), version);
    write(name, schema);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
