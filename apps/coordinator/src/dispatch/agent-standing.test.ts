import { createAgentStandings } from './agent-standing';

function setup() {
  let now = 1_000;
  const standings = createAgentStandings({ baseMs: 30_000, maxMs: 100_000, nowMs: () => now });
  return { standings, advance: (ms: number) => (now += ms), now: () => now };
}

describe('agent standing', () => {
  it('leaves agents in good standing alone', () => {
    const { standings } = setup();
    expect(standings.slots('a', 8)).toBe(8);
    expect(standings.rank('a')).toBe(0);
    expect(standings.view('a')).toEqual({ quarantinedUntilMs: null, probation: false });
    expect(standings.unrenewed('a', 0)).toBe(false);
  });

  it('quarantines on the first unrenewed lease, then puts the agent on probation with one slot', () => {
    const { standings, advance, now } = setup();
    expect(standings.unrenewed('a', 5)).toBe(true);
    expect(standings.view('a')).toEqual({ quarantinedUntilMs: now() + 30_000, probation: false });
    expect(standings.slots('a', 10_000)).toBe(0);
    expect(standings.unrenewed('a', 3)).toBe(false); // already quarantined: not extended
    advance(30_000);
    expect(standings.slots('a', 10_000)).toBe(1);
    expect(standings.rank('a')).toBe(1);
    expect(standings.view('a')).toEqual({ quarantinedUntilMs: null, probation: true });
  });

  it('doubles each quarantine up to the cap, and a recorded outcome clears the record', () => {
    const { standings, advance, now } = setup();
    standings.unrenewed('a', 1);
    advance(30_000);
    standings.unrenewed('a', 1);
    expect(standings.view('a').quarantinedUntilMs).toBe(now() + 60_000);
    advance(60_000);
    standings.unrenewed('a', 1);
    expect(standings.view('a').quarantinedUntilMs).toBe(now() + 100_000);
    advance(100_000);
    standings.succeeded('a');
    expect(standings.slots('a', 4)).toBe(4);
    standings.unrenewed('a', 1);
    expect(standings.view('a').quarantinedUntilMs).toBe(now() + 30_000);
  });
});
