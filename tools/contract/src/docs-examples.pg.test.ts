/**
 * docs/clients.md cannot rot: every code block whose info string ends in
 * `example` (```python example) runs here, as a reader would run it, against a
 * real coordinator with tokens on and a real agent: the shell blocks (curl,
 * grpcurl) with bash, Python with the client installed in .tmp/python, Go as a
 * module of its own that requires kairos.dev/client (replaced by clients/go),
 * TypeScript compiled by swc and run by node against @kairos/client. Each
 * must exit 0 and show a finished run; the ones that try to cancel a claimed
 * job must show the refusal they branched on.
 */
import { transformSync } from '@swc/core';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createTestDatabase, startAgentProcess, startCoordinatorProcess, stopAll, type TestDatabase } from '@kairos/testing';
import { clientEnv, expectPassed, ROOT, runToEnd, type ClientEnv } from './client-env';

interface Example {
  lang: string;
  code: string;
  /** Position among the document's examples, for names and messages. */
  index: number;
}

/** The ```<lang> example blocks of a Markdown text, in order. */
function examplesOf(markdown: string): Example[] {
  const blocks = [...markdown.matchAll(/^```(\w+) example\n([\s\S]*?)^```$/gm)];
  return blocks.map((block, index) => ({ lang: block[1]!, code: block[2]!, index }));
}

const SCRATCH = path.join(ROOT, '.tmp', 'docs-examples');

describe('docs/clients.md examples run', () => {
  let db: TestDatabase;
  let env: ClientEnv;
  let runEnv: Record<string, string>;
  const examples: Example[] = [];

  beforeAll(async () => {
    examples.push(...examplesOf(await readFile(path.join(ROOT, 'docs/clients.md'), 'utf8')));
    env = await clientEnv();
    db = await createTestDatabase();
    const store = db.createStore();
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url, auth: true });
    const agentToken = (await store.tokens.create({ namespace: 'docs', role: 'agent' })).secret;
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'docs-agent', tasks: 'sleep', env: { KAIROS_TOKEN: agentToken } });
    runEnv = {
      KAIROS_URL: coordinator.httpUrl,
      KAIROS_COORDINATOR: coordinator.grpcAddress,
      KAIROS_TOKEN: (await store.tokens.create({ namespace: 'docs', role: 'writer' })).secret,
      PATH: `${env.goBin}${path.delimiter}${process.env.PATH ?? ''}`,
      PYTHONDONTWRITEBYTECODE: '1',
    };
    await rm(SCRATCH, { recursive: true, force: true });
    await mkdir(SCRATCH, { recursive: true });
  }, 15 * 60_000);

  afterAll(async () => {
    await stopAll();
    await db?.drop();
    await rm(SCRATCH, { recursive: true, force: true });
  });

  test('the document has an example in each language', () => {
    // The first five: a job, its runs, a claimed job's refusal; the next four: a batch create.
    expect(examples.map((example) => example.lang)).toEqual(['sh', 'sh', 'python', 'go', 'typescript', 'sh', 'python', 'go', 'typescript']);
  });

  async function run(example: Example): Promise<string> {
    const dir = path.join(SCRATCH, `${example.index}-${example.lang}`);
    await mkdir(dir, { recursive: true });
    switch (example.lang) {
      case 'sh': {
        await writeFile(path.join(dir, 'example.sh'), example.code);
        const done = await runToEnd('bash', ['-euo', 'pipefail', 'example.sh'], { cwd: dir, env: runEnv });
        expectPassed(`shell example ${example.index}`, done);
        return done.output;
      }
      case 'python': {
        await writeFile(path.join(dir, 'example.py'), example.code);
        const done = await runToEnd(env.python, ['example.py'], { cwd: dir, env: runEnv });
        expectPassed('Python example', done);
        return done.output;
      }
      case 'go': {
        await writeFile(path.join(dir, 'main.go'), example.code);
        await writeFile(
          path.join(dir, 'go.mod'),
          `module example\n\ngo 1.26.0\n\nrequire kairos.dev/client v0.0.0\n\nreplace kairos.dev/client => ${path.join(ROOT, 'clients/go')}\n`,
        );
        expectPassed('go mod tidy', await runToEnd('go', ['mod', 'tidy'], { cwd: dir, env: runEnv }));
        const done = await runToEnd('go', ['run', '.'], { cwd: dir, env: runEnv });
        expectPassed('Go example', done);
        return done.output;
      }
      case 'typescript': {
        // Inside the repository, so that node resolves @kairos/client from its node_modules.
        const { code } = transformSync(example.code, { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } });
        await writeFile(path.join(dir, 'example.mjs'), code);
        const done = await runToEnd(process.execPath, ['example.mjs'], { cwd: dir, env: runEnv });
        expectPassed('TypeScript example', done);
        return done.output;
      }
      default:
        throw new Error(`no runner for \`\`\`${example.lang} example`);
    }
  }

  test.each([0, 1, 2, 3, 4, 5, 6, 7, 8])('example %i runs to a finished run (and a claimed-job refusal where it tries one)', async (index) => {
    const example = examples[index]!;
    const output = await run(example);
    expect(output).toContain('SUCCEEDED');
    if (example.code.includes('abort')) {
      // The refusal the example branched on, with the agent that held the job.
      expect(output).toMatch(/JOB_CLAIMED|claimed by docs-agent/);
      expect(output).toContain('docs-agent');
    }
    if (example.code.includes('not cron') || example.code.includes('Mars/Olympus')) {
      // The batch examples: the bad item was refused on its own, naming its field.
      expect(output).toMatch(/schedule|timezone|INVALID_ARGUMENT/);
    }
  }, 10 * 60_000);
});
