/**
 * Poll until a condition holds, instead of sleeping and hoping. Fails with the
 * description and the last value seen, so a timeout says what was awaited.
 */
export interface WaitForOptions {
  timeoutMs?: number;
  intervalMs?: number;
  description?: string;
}

export async function waitFor<T>(
  probe: () => T | Promise<T>,
  options: WaitForOptions = {},
): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const intervalMs = options.intervalMs ?? 20;
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  let lastError: unknown;
  for (;;) {
    try {
      last = await probe();
      lastError = undefined;
      if (last !== undefined && last !== null && (last as unknown) !== false) return last as NonNullable<T>;
    } catch (error: unknown) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const what = options.description ?? 'condition';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last value: ${JSON.stringify(last)}`, {
        cause: lastError,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
