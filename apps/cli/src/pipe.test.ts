/**
 * The real `kairos` process writing into a pipe whose reader stops early,
 * exactly as `kairos jobs list | head -2`: it exits quietly (nothing on
 * stderr) instead of dying with an EPIPE stack trace.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { sampleJob, startFakeJobService, type FakeJobService } from '../../../libs/client/src/test-support/fake-job-service';

const BIN = path.resolve(__dirname, '..', 'bin', 'kairos.js');

describe('kairos writing into a closed pipe', () => {
  let server: FakeJobService | undefined;
  afterEach(async () => {
    await server?.stop();
  });

  it('says nothing and exits 0 when the reader goes away (| head -2)', async () => {
    server = await startFakeJobService({
      listJobs: () => ({ jobs: Array.from({ length: 1000 }, (_, i) => sampleJob({ id: `job-${i}`, name: `job number ${i}` })), nextCursor: '' }),
    });
    // `exit $?` after the pipeline would report head's status; ask for kairos's with a status file.
    const script = `"${process.execPath}" "${BIN}" --address ${server.address} jobs list 2>stderr.txt; echo $? > status.txt`;
    const dir = await mkdtemp(path.join(tmpdir(), 'kairos-pipe-'));
    const { stdout } = await promisify(execFile)('sh', ['-c', `(${script}) | head -2`], { cwd: dir });
    const stderr = await readFile(path.join(dir, 'stderr.txt'), 'utf8');
    const status = (await readFile(path.join(dir, 'status.txt'), 'utf8')).trim();
    await rm(dir, { recursive: true, force: true });
    expect(stdout.split('\n').filter(Boolean)).toHaveLength(2);
    expect({ status, stderr }).toEqual({ status: '0', stderr: '' });
  });
});
