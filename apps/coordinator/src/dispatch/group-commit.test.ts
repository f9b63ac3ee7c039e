import { groupCommit } from './group-commit';

/** A flush that holds until released, so several submissions queue behind it. */
function gatedFlush(fail: (items: string[]) => Error | undefined) {
  const flushes: string[][] = [];
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  return {
    flushes,
    open: () => release(),
    flush: async (items: string[]) => {
      flushes.push(items);
      if (flushes.length === 1) await gate;
      const error = fail(items);
      if (error) throw error;
      return items.map((item) => item.toUpperCase());
    },
  };
}

describe('group commit', () => {
  it('flushes what queued during a flush in one call, answering each submitter with its own results', async () => {
    const gated = gatedFlush(() => undefined);
    const commit = groupCommit(gated.flush);
    const first = commit.submit(['a']);
    const second = commit.submit(['b', 'c']);
    const third = commit.submit(['d']);
    gated.open();
    expect(await Promise.all([first, second, third])).toEqual([['A'], ['B', 'C'], ['D']]);
    expect(gated.flushes).toEqual([['a'], ['b', 'c', 'd']]);
  });

  it('isolates a bad submission: the others in its flush still succeed', async () => {
    const poison = new Error('bigint out of range');
    const gated = gatedFlush((items) => (items.includes('bad') ? poison : undefined));
    const commit = groupCommit(gated.flush, { isolate: (error) => error === poison });
    const first = commit.submit(['a']);
    const good = commit.submit(['b']);
    const bad = commit.submit(['bad', 'c']);
    const alsoGood = commit.submit(['d']);
    gated.open();
    await expect(first).resolves.toEqual(['A']);
    await expect(good).resolves.toEqual(['B']);
    await expect(bad).rejects.toBe(poison);
    await expect(alsoGood).resolves.toEqual(['D']);
  });

  it('fails the whole flush at once when the error is not one to isolate (the database is down)', async () => {
    const down = new Error('connection refused');
    const gated = gatedFlush((items) => (items.length > 1 ? down : undefined));
    const commit = groupCommit(gated.flush, { isolate: () => false });
    const first = commit.submit(['a']);
    const second = commit.submit(['b']);
    const third = commit.submit(['c']);
    gated.open();
    await expect(first).resolves.toEqual(['A']);
    await expect(second).rejects.toBe(down);
    await expect(third).rejects.toBe(down);
    expect(gated.flushes).toEqual([['a'], ['b', 'c']]);
  });
});
