import { ConfigError, coordinatorOptionsFromEnv } from './config';

describe('coordinator configuration: deployment switches', () => {
  test('defaults: migrate at start, rebalance agents, demand looks five minutes ahead', () => {
    expect(coordinatorOptionsFromEnv({})).toMatchObject({ migrate: true, rebalance: true, demandHorizonMs: 300_000 });
  });

  test('reads KAIROS_MIGRATE, KAIROS_REBALANCE and KAIROS_DEMAND_HORIZON_MS', () => {
    expect(coordinatorOptionsFromEnv({ KAIROS_MIGRATE: 'false', KAIROS_REBALANCE: '0', KAIROS_DEMAND_HORIZON_MS: '900000' })).toMatchObject({
      migrate: false,
      rebalance: false,
      demandHorizonMs: 900_000,
    });
  });

  test.each([
    ['KAIROS_MIGRATE', 'later', /KAIROS_MIGRATE: must be true or false/],
    ['KAIROS_REBALANCE', 'sometimes', /KAIROS_REBALANCE: must be true or false/],
    ['KAIROS_DEMAND_HORIZON_MS', '0', /KAIROS_DEMAND_HORIZON_MS/],
  ])('rejects a bad %s (%s) naming the variable', (name, value, message) => {
    expect(() => coordinatorOptionsFromEnv({ [name]: value })).toThrow(message);
    expect(() => coordinatorOptionsFromEnv({ [name]: value })).toThrow(ConfigError);
  });
});
