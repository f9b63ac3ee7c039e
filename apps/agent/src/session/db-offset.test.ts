import { DbOffset } from './db-offset';

describe('DbOffset', () => {
  it('knows nothing before a reading, and ignores unknown (0) stamps', () => {
    const offset = new DbOffset();
    offset.record(0, 0, 10, 20);
    expect(offset.toLocal(1_000)).toBeUndefined();
    expect(offset.errorMs).toBe(Number.POSITIVE_INFINITY);
  });

  it('places the stamp at the arrival: an instant converted with it is never early, late by at most the error', () => {
    const offset = new DbOffset();
    // Database clock 1,000,000 ms ahead of ours; sent at 100, held 6 ms by the coordinator, back at 110.
    offset.record(1_000_108, 0.5, 100, 110, 6);
    expect(offset.toLocal(1_000_108)).toBe(110);
    // Network part of the round trip (4 ms) plus the coordinator's error.
    expect(offset.errorMs).toBe(4.5);
  });

  it('keeps the tightest of its recent lower bounds: a slow reply is outvoted, not averaged in', () => {
    const offset = new DbOffset(3);
    offset.record(1_000_103, 0, 100, 104); // stamped 1 ms before arrival
    offset.record(1_000_250, 0, 200, 300); // a reply delayed 50 ms after its stamp
    expect(offset.toLocal(1_000_103)).toBe(104);
    expect(offset.errorMs).toBe(4);
    // Older readings leave the window.
    offset.record(1_000_450, 0, 400, 500);
    offset.record(1_000_650, 0, 600, 700);
    expect(offset.toLocal(1_000_650)).toBe(700);
  });
});
