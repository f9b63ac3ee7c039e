/**
 * The built-in handlers an agent registers, given its allow-lists. `exec` is
 * registered only when its allow-list is non-empty, so an agent without one
 * never advertises it.
 */
import type { TaskHandler } from '../sdk';
import { execTask } from './exec';
import { httpTask } from './http';
import { sleepTask } from './sleep';

export interface BuiltinOptions {
  readonly httpAllowHosts: readonly string[];
  readonly execAllow: readonly string[];
  readonly execCwdRoot?: string | undefined;
  /** exec: SIGTERM to SIGKILL on abort (default 5 s). */
  readonly execKillGraceMs?: number | undefined;
}

export function builtinHandlers(options: BuiltinOptions): Record<string, TaskHandler> {
  const handlers: Record<string, TaskHandler> = {
    http: httpTask(options.httpAllowHosts),
    sleep: sleepTask,
  };
  if (options.execAllow.length > 0) handlers['exec'] = execTask({
      allow: options.execAllow,
      cwdRoot: options.execCwdRoot,
      ...(options.execKillGraceMs === undefined ? {} : { killGraceMs: options.execKillGraceMs }),
    });
  return handlers;
}
