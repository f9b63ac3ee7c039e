import { taskContext } from '../test-support/task-context';
import { sleepTask } from './sleep';

describe('sleep task', () => {
  it('sleeps for the given seconds', async () => {
    const started = performance.now();
    await sleepTask({ seconds: 0.05 }, taskContext());
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
  });

  it('ends early when its signal aborts', async () => {
    const controller = new AbortController();
    const pending = sleepTask({ seconds: 60 }, taskContext({ signal: controller.signal }));
    controller.abort();
    await expect(pending).rejects.toThrow(/abort/i);
  });

  it('names the bad field', async () => {
    await expect(sleepTask({}, taskContext())).rejects.toThrow(/invalid payload field "seconds"/);
    await expect(sleepTask({ seconds: 'ten' }, taskContext())).rejects.toThrow(/"seconds"/);
    await expect(sleepTask({ seconds: -1 }, taskContext())).rejects.toThrow(/"seconds"/);
  });
});
