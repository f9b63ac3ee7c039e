/**
 * `kairos dev` runs with authentication on, like production. It keeps two
 * tokens in its data folder, each in a file only its owner can read (0600):
 * `dev-token` (admin of namespace `default`: the CLI uses it when no token is
 * given, the banner's curl sends it) and `dev-agent-token` (its own agent's).
 * A token still valid is reused on the next start; a missing, revoked or
 * expired one is replaced.
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { StoreModule } from './process-modules';

export const DEV_TOKEN_FILE = 'dev-token';
export const DEV_AGENT_TOKEN_FILE = 'dev-agent-token';
export const DEV_NAMESPACE = 'default';

export interface DevTokens {
  admin: string;
  agent: string;
  /** Where the admin token is. */
  adminFile: string;
}

export async function ensureDevTokens(module: StoreModule, databaseUrl: string, dataDir: string): Promise<DevTokens> {
  const store = module.createStore(module.createPool({ connectionString: databaseUrl, max: 1 }));
  try {
    await mkdir(dataDir, { recursive: true });
    const ensure = async (file: string, role: 'admin' | 'agent', name: string): Promise<string> => {
      const existing = await readFile(file, 'utf8').then(
        (text) => text.trim(),
        () => undefined,
      );
      if (existing !== undefined && (await store.tokens.authenticate(existing)) !== null) {
        await chmod(file, 0o600);
        return existing;
      }
      const { secret } = await store.tokens.create({ namespace: DEV_NAMESPACE, role, name });
      await writeFile(file, `${secret}\n`, { mode: 0o600 });
      await chmod(file, 0o600); // writeFile's mode applies only to a new file
      return secret;
    };
    const adminFile = path.join(dataDir, DEV_TOKEN_FILE);
    return {
      admin: await ensure(adminFile, 'admin', 'kairos dev: admin'),
      agent: await ensure(path.join(dataDir, DEV_AGENT_TOKEN_FILE), 'agent', 'kairos dev: local agent'),
      adminFile,
    };
  } finally {
    await store.close();
  }
}
