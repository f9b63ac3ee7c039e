import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { taskContext } from '../test-support/task-context';
import { builtinHandlers } from './builtins';
import { execTask } from './exec';

const ECHO = '/bin/echo';
const SH = '/bin/sh';
const SLEEP = '/bin/sleep';

describe('exec task', () => {
  it('runs argv without a shell: metacharacters stay literal', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kairos-exec-'));
    const marker = path.join(dir, 'created-by-shell');
    try {
      const task = execTask({ allow: [ECHO] });
      const result = await task({ argv: [ECHO, '$HOME', `; touch ${marker}`, '`id`'] }, taskContext());
      expect(result).toEqual({ exitCode: 0, stdoutTail: `$HOME ; touch ${marker} \`id\`\n` });
      expect(existsSync(marker)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a program that is not allow-listed', async () => {
    const task = execTask({ allow: [ECHO] });
    await expect(task({ argv: ['/bin/rm', '-rf', '/tmp/x'] }, taskContext())).rejects.toThrow(
      /program "\/bin\/rm" is not on this agent's exec allow-list/,
    );
    await expect(task({ argv: ['echo', 'hi'] }, taskContext())).rejects.toThrow(/allow-list/); // exact match only
  });

  it('takes absolute paths only in its allow-list and cwd root', () => {
    expect(() => execTask({ allow: ['echo'] })).toThrow('exec allow-list entries must be absolute paths (got "echo")');
    expect(() => execTask({ allow: [ECHO], cwdRoot: 'jobs' })).toThrow('the exec cwd root must be an absolute path');
  });

  it('is not registered at all without an allow-list', () => {
    expect(Object.keys(builtinHandlers({ httpAllowHosts: [], execAllow: [] })).sort()).toEqual(['http', 'sleep']);
    expect(Object.keys(builtinHandlers({ httpAllowHosts: [], execAllow: [ECHO] })).sort()).toEqual(['exec', 'http', 'sleep']);
  });

  it('fails on a non-zero exit with the end of stderr, and passes env and a cwd under the root', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'kairos-exec-root-'));
    mkdirSync(path.join(root, 'work'));
    try {
      const task = execTask({ allow: [SH], cwdRoot: root });
      await expect(
        task({ argv: [SH, '-c', 'echo "went wrong in $PWD with $GREETING" >&2; exit 3'], env: { GREETING: 'hi' }, cwd: 'work' }, taskContext()),
      ).rejects.toThrow(`"/bin/sh" exited with code 3; stderr: went wrong in ${realpathSync(root)}/work with hi`);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('refuses a cwd outside the root (symlinks followed), and any cwd without a root', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'kairos-exec-root-'));
    symlinkSync('/etc', path.join(root, 'escape'));
    try {
      const task = execTask({ allow: [ECHO], cwdRoot: root });
      await expect(task({ argv: [ECHO], cwd: '/tmp' }, taskContext())).rejects.toThrow(/invalid payload field "cwd": "\/tmp" is outside/);
      await expect(task({ argv: [ECHO], cwd: '../..' }, taskContext())).rejects.toThrow(/is outside/);
      await expect(task({ argv: [ECHO], cwd: 'escape' }, taskContext())).rejects.toThrow(/is outside/);
      await expect(execTask({ allow: [ECHO] })({ argv: [ECHO], cwd: '/tmp' }, taskContext())).rejects.toThrow(
        /no KAIROS_EXEC_CWD_ROOT/,
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it.each(['PATH', 'LD_PRELOAD', 'LD_LIBRARY_PATH', 'DYLD_INSERT_LIBRARIES', 'NODE_OPTIONS', 'PYTHONPATH', 'BASH_ENV', 'KAIROS_TOKEN', 'GCONV_PATH', '1BAD', 'A=B'])(
    'refuses a payload env setting %s, naming the field',
    async (name) => {
      const task = execTask({ allow: [ECHO] });
      await expect(task({ argv: [ECHO], env: { [name]: 'x' } }, taskContext())).rejects.toThrow(/invalid payload field "env/);
    },
  );

  it('starts the child from a minimal environment, never the agent\'s, with the run\'s identity', async () => {
    process.env['KAIROS_TOKEN'] = 'agent-secret';
    process.env['DATABASE_URL'] = 'postgres://user:secret@db/kairos';
    try {
      const task = execTask({ allow: [SH] });
      const result = await task(
        { argv: [SH, '-c', 'echo "token=[$KAIROS_TOKEN] db=[$DATABASE_URL] path=[$PATH] job=[$KAIROS_JOB_ID] fence=[$KAIROS_FENCING_TOKEN]"'] },
        taskContext(),
      );
      const ctx = taskContext();
      expect(result).toMatchObject({
        stdoutTail: `token=[] db=[] path=[/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin] job=[${ctx.jobId}] fence=[${ctx.fencingToken}]\n`,
      });
    } finally {
      delete process.env['KAIROS_TOKEN'];
      delete process.env['DATABASE_URL'];
    }
  });

  it('kills the child when the run is aborted', async () => {
    const controller = new AbortController();
    const task = execTask({ allow: [SLEEP], killGraceMs: 200 });
    const started = performance.now();
    const pending = task({ argv: [SLEEP, '30'] }, taskContext({ signal: controller.signal }));
    controller.abort();
    await expect(pending).rejects.toThrow(/"\/bin\/sleep" was killed by SIGTERM/);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('kills a child that ignores SIGTERM with SIGKILL once the grace has passed', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kairos-exec-'));
    const ready = path.join(dir, 'trap-set');
    try {
      const controller = new AbortController();
      const task = execTask({ allow: [SH], killGraceMs: 300 });
      const script = `trap '' TERM; : > ${ready}; while :; do sleep 0.05; done`;
      const pending = task({ argv: [SH, '-c', script] }, taskContext({ signal: controller.signal }));
      pending.catch(() => undefined);
      await waitForFile(ready);
      const abortedAt = performance.now();
      controller.abort();
      await expect(pending).rejects.toThrow(/"\/bin\/sh" was killed by SIGKILL/);
      expect(performance.now() - abortedAt).toBeGreaterThanOrEqual(250);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports a program that cannot start, and names a bad payload field', async () => {
    const task = execTask({ allow: ['/nonexistent/program'] });
    await expect(task({ argv: ['/nonexistent/program'] }, taskContext())).rejects.toThrow(/could not start "\/nonexistent\/program"/);
    await expect(task({ argv: [] }, taskContext())).rejects.toThrow(/invalid payload field "argv"/);
    await expect(task({ argv: 'ls -l' }, taskContext())).rejects.toThrow(/"argv"/);
  });
});

async function waitForFile(file: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`${file} never appeared`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
