export { startCoordinator, type RunningCoordinator } from './coordinator';
export { ConfigError, coordinatorOptionsFromEnv, type CoordinatorOptions } from './config';
