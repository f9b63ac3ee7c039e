/**
 * @kairos/client is ready to publish: `npm pack` of it and of @kairos/proto
 * makes tarballs that hold the compiled code and its types (no sources, tests
 * or build state), and a project of its own that installs the two tarballs
 * can require it, import it as ESM, and type-check against it.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expectPassed, ROOT, runToEnd } from './client-env';

interface Packed {
  filename: string;
  files: Array<{ path: string }>;
}

describe('npm pack of @kairos/client and @kairos/proto', () => {
  let scratch: string;
  const packed: Record<string, Packed> = {};

  beforeAll(async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), 'kairos-pack-'));
    for (const lib of ['proto', 'client']) {
      const done = await runToEnd('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: path.join(ROOT, 'libs', lib) });
      expectPassed(`npm pack libs/${lib}`, done);
      packed[lib] = (JSON.parse(done.output.slice(done.output.indexOf('['))) as Packed[])[0]!;
    }
  }, 120_000);
  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  test.each(['proto', 'client'])('the %s tarball holds compiled code and types, nothing else', (lib) => {
    const files = packed[lib]!.files.map((file) => file.path);
    expect(files).toEqual(expect.arrayContaining(['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts']));
    expect(files.filter((file) => !file.startsWith('dist/') && !['package.json', 'README.md'].includes(file))).toEqual([]);
    expect(files.filter((file) => /\.test\.|test-support|tsbuildinfo/.test(file))).toEqual([]);
  });

  test('a project of its own installs both tarballs, requires, imports and type-checks the client', async () => {
    const project = path.join(scratch, 'app');
    await mkdir(project, { recursive: true });
    await writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
    const tarballs = ['proto', 'client'].map((lib) => path.join(scratch, packed[lib]!.filename));
    expectPassed('npm install', await runToEnd('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...tarballs], { cwd: project }));
    const cjs = await runToEnd(process.execPath, ['-e', "const k = require('@kairos/client'); console.log(typeof k.createKairosClient, typeof k.jobJson)"], { cwd: project });
    expect(cjs.output.trim()).toBe('function function');
    await writeFile(path.join(project, 'esm.mjs'), "import { createKairosClient, KairosError } from '@kairos/client';\nconsole.log(typeof createKairosClient, typeof KairosError);\n");
    expect((await runToEnd(process.execPath, ['esm.mjs'], { cwd: project })).output.trim()).toBe('function function');
    await writeFile(
      path.join(project, 'use.ts'),
      [
        "import { createKairosClient, type Job, type KairosError } from '@kairos/client';",
        "const client = createKairosClient({ address: '127.0.0.1:50051', token: 'kairos_x' });",
        'export const states: Array<Job["state"]> = ["DUE"];',
        'export const reasonOf = (error: KairosError): string | null => error.reason;',
        'client.close();',
      ].join('\n'),
    );
    const tsc = path.join(ROOT, 'node_modules/.bin/tsc');
    const typed = await runToEnd(tsc, ['--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', 'use.ts'], { cwd: project });
    expectPassed('tsc against the installed package', typed);
  }, 180_000);
});
