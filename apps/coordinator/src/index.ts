export { startCoordinator, type RunningCoordinator } from './coordinator';
export { coordinatorOptionsFromEnv, type CoordinatorOptions } from './config';
