import fc from 'fast-check';
import { agentsToMove } from './rebalance';

describe('agentsToMove', () => {
  test.each([
    // mine, others, moved
    [6, [0], 3],
    [4, [2], 1],
    [4, [3], 0], // within one: even
    [4, [4, 2], 1],
    [3, [3], 0],
    [2, [0], 1],
    [1, [0], 0], // a spread of one is as even as it gets
    [6, [0, 0], 4],
    [5, [5, 0], 2], // 10 over three: down to 3
    [0, [6], 0], // the emptier one never moves anything: the fuller one does
    [9, [], 0], // alone
  ])('%i agents here, others %j: move %i', (mine, others, moved) => {
    expect(agentsToMove(mine, others)).toBe(moved);
  });

  test('never leaves this coordinator under the lower share, and only moves when some other holds two fewer', () => {
    fc.assert(
      fc.property(fc.nat(200), fc.array(fc.nat(200), { minLength: 1, maxLength: 8 }), (mine, others) => {
        const moved = agentsToMove(mine, others);
        const share = Math.floor((mine + others.reduce((a, b) => a + b, 0)) / (others.length + 1));
        expect(moved).toBeGreaterThanOrEqual(0);
        expect(mine - moved).toBeGreaterThanOrEqual(Math.min(mine, share));
        if (moved > 0) expect(mine - Math.min(...others)).toBeGreaterThanOrEqual(2);
        // An even spread (all within one) is left alone: it is where the moves end.
        if (Math.max(mine, ...others) - Math.min(mine, ...others) <= 1) expect(moved).toBe(0);
      }),
    );
  });
});
