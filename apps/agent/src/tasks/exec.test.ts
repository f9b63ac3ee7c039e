import { existsSync, mkdtempSync, rmSync } from 'node:fs';
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

  it('is not registered at all without an allow-list', () => {
    expect(Object.keys(builtinHandlers({ httpAllowHosts: [], execAllow: [] })).sort()).toEqual(['http', 'sleep']);
    expect(Object.keys(builtinHandlers({ httpAllowHosts: [], execAllow: [ECHO] })).sort()).toEqual(['exec', 'http', 'sleep']);
  });

  it('fails on a non-zero exit with the end of stderr, and passes env and cwd', async () => {
    const task = execTask({ allow: [SH] });
    await expect(task({ argv: [SH, '-c', 'echo "went wrong in $PWD with $GREETING" >&2; exit 3'], env: { GREETING: 'hi' }, cwd: '/tmp' }, taskContext())).rejects.toThrow(
      '"/bin/sh" exited with code 3; stderr: went wrong in /tmp with hi',
    );
  });

  it('does not hand the agent\'s KAIROS_* variables to the child', async () => {
    process.env['KAIROS_TOKEN'] = 'agent-secret';
    try {
      const task = execTask({ allow: [SH] });
      const result = await task({ argv: [SH, '-c', 'echo "token=[$KAIROS_TOKEN]"'] }, taskContext());
      expect(result).toMatchObject({ stdoutTail: 'token=[]\n' });
    } finally {
      delete process.env['KAIROS_TOKEN'];
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

  it('reports a program that cannot start, and names a bad payload field', async () => {
    const task = execTask({ allow: ['/nonexistent/program'] });
    await expect(task({ argv: ['/nonexistent/program'] }, taskContext())).rejects.toThrow(/could not start "\/nonexistent\/program"/);
    await expect(task({ argv: [] }, taskContext())).rejects.toThrow(/invalid payload field "argv"/);
    await expect(task({ argv: 'ls -l' }, taskContext())).rejects.toThrow(/"argv"/);
  });
});
