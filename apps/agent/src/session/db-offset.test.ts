import { DbOffset } from './db-offset';

describe('DbOffset', () => {
  it('knows nothing before a reading, and ignores unknown (0) stamps', () => {
    const offset = new DbOffset();
    offset.record(0, 0, 10, 20);
    expect(offset.toLocal(1_000)).toBeUndefined();
    expect(offset.errorMs).toBe(Number.POSITIVE_INFINITY);
  });

  it('takes the midpoint of send and arrival, good to half the round trip plus the coordinator error', () => {
    const offset = new DbOffset();
    // Database clock 1,000,000 ms ahead of ours; the reply was stamped somewhere in [100, 110].
    offset.record(1_000_105, 0.5, 100, 110);
    expect(offset.toLocal(1_000_105)).toBe(105);
    expect(offset.errorMs).toBe(5.5);
  });

  it('keeps the tightest of its recent readings: a slow reply is outvoted, not averaged in', () => {
    const offset = new DbOffset(3);
    offset.record(1_000_102, 0, 100, 104); // round trip 4: error 2
    offset.record(1_000_300, 0, 200, 300); // round trip 100: a delayed reply, stamped late
    expect(offset.toLocal(1_000_102)).toBe(102);
    expect(offset.errorMs).toBe(2);
    // Older readings leave the window.
    offset.record(1_000_450, 0, 400, 500);
    offset.record(1_000_650, 0, 600, 700);
    expect(offset.errorMs).toBe(50);
  });
});
