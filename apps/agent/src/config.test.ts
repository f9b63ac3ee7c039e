import { hostname } from 'node:os';
import { pino } from 'pino';
import { agentOptionsFromEnv, checkAgentOptions, ConfigError } from './config';
import type { TaskHandler } from './sdk';

const noop: TaskHandler = async () => undefined;

describe('agentOptionsFromEnv', () => {
  it('applies the documented defaults', () => {
    const options = agentOptionsFromEnv({});
    expect(options).toMatchObject({
      coordinator: '127.0.0.1:50051',
      agentId: `${hostname()}-${process.pid}`,
      capacity: 4,
      httpAllowHosts: [],
      execAllow: [],
      drainGraceMs: 30_000,
      tasks: ['http', 'sleep'], // exec is not even advertised without an allow-list
    });
    expect(options.token).toBeUndefined();
    expect(options.trustMarginMs).toBeUndefined();
    expect(options.health).toBeUndefined();
  });

  it('reads every variable, treating empty ones as unset', () => {
    const options = agentOptionsFromEnv({
      KAIROS_COORDINATOR: 'coord.internal:7000',
      KAIROS_AGENT_ID: 'agent-7',
      KAIROS_AGENT_TASKS: 'sleep, exec',
      KAIROS_AGENT_CAPACITY: '12',
      KAIROS_TOKEN: 's3cret',
      KAIROS_HTTP_ALLOW_HOSTS: 'api.example.com, localhost:8080',
      KAIROS_EXEC_ALLOW: '/usr/bin/backup',
      KAIROS_DRAIN_GRACE_MS: '5000',
      KAIROS_TRUST_MARGIN_MS: '',
      KAIROS_AGENT_HEALTH_PORT: '8081',
    });
    expect(options).toMatchObject({
      health: { port: 8081, host: '0.0.0.0' },
      coordinator: 'coord.internal:7000',
      agentId: 'agent-7',
      tasks: ['sleep', 'exec'],
      capacity: 12,
      token: 's3cret',
      httpAllowHosts: ['api.example.com', 'localhost:8080'],
      execAllow: ['/usr/bin/backup'],
      drainGraceMs: 5000,
    });
    expect(options.trustMarginMs).toBeUndefined();
  });

  it.each([
    ['KAIROS_AGENT_CAPACITY', 'zero', /KAIROS_AGENT_CAPACITY: must be a whole number/],
    ['KAIROS_AGENT_CAPACITY', '0', /KAIROS_AGENT_CAPACITY/],
    ['KAIROS_DRAIN_GRACE_MS', '-1', /KAIROS_DRAIN_GRACE_MS/],
    ['KAIROS_COORDINATOR', 'no port here', /KAIROS_COORDINATOR: must be host:port/],
    ['KAIROS_AGENT_TASKS', 'sleep,teleport', /KAIROS_AGENT_TASKS: no handler for task "teleport"/],
    ['KAIROS_AGENT_TASKS', 'exec', /KAIROS_AGENT_TASKS: task "exec" is disabled/],
    ['KAIROS_EXEC_ALLOW', 'backup', /KAIROS_EXEC_ALLOW: entries must be absolute paths/],
    ['KAIROS_EXEC_CWD_ROOT', 'jobs', /KAIROS_EXEC_CWD_ROOT: must be an absolute path/],
    ['KAIROS_TLS', 'maybe', /KAIROS_TLS: must be true or false/],
    ['KAIROS_AGENT_HEALTH_PORT', '70000', /KAIROS_AGENT_HEALTH_PORT/],
    ['KAIROS_AGENT_HEALTH_PORT', 'http', /KAIROS_AGENT_HEALTH_PORT: must be a whole number/],
  ])('rejects a bad %s (%s) naming the variable', (name, value, message) => {
    expect(() => agentOptionsFromEnv({ [name]: value })).toThrow(message);
    expect(() => agentOptionsFromEnv({ [name]: value })).toThrow(ConfigError);
  });

  it('lets overrides win and advertises custom handlers by default', () => {
    const logger = pino({ level: 'silent' });
    const options = agentOptionsFromEnv({ KAIROS_AGENT_CAPACITY: '2' }, { capacity: 9, handlers: { report: noop }, logger });
    expect(options.capacity).toBe(9);
    expect(options.tasks).toEqual(['http', 'report', 'sleep']);
    expect(options.logger).toBe(logger);
    expect(() => agentOptionsFromEnv({}, { capacity: 0 })).toThrow(/^capacity: /);
  });
});

describe('checkAgentOptions', () => {
  const base = {
    coordinator: '127.0.0.1:1',
    agentId: 'a',
    tasks: ['sleep'],
    capacity: 1,
    httpAllowHosts: [],
    execAllow: [],
    drainGraceMs: 0,
  };

  it('accepts valid options and rejects bad ones naming the field', () => {
    expect(checkAgentOptions(base).tasks).toEqual(['sleep']);
    expect(() => checkAgentOptions({ ...base, tasks: [] })).toThrow(/^tasks: must name at least one task/);
    expect(() => checkAgentOptions({ ...base, tasks: ['sleep', 'sleep'] })).toThrow(/^tasks: must not repeat/);
    expect(() => checkAgentOptions({ ...base, capacity: 1.5 })).toThrow(/^capacity: /);
    expect(() => checkAgentOptions({ ...base, handlers: { x: 'nope' as unknown as TaskHandler } })).toThrow(/^handlers: must be a function/);
  });
});
