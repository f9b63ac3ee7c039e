/**
 * Global options (`--address`, `--token`, `--json`, TLS) resolved against the
 * environment, and the client built from them for one command.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createKairosClient, KairosError, KairosErrorCode, type KairosClient, type TlsOptions } from '@kairos/client';
import type { Command } from 'commander';
import { UsageError } from './errors';
import { readFlagFile } from './flags';
import type { CliIo } from './io';

export const DEFAULT_ADDRESS = '127.0.0.1:50051';

export interface GlobalOptions {
  address: string;
  token: string | undefined;
  json: boolean;
  tls: TlsOptions | false;
}

interface RawGlobals {
  address?: string;
  token?: string;
  json?: boolean;
  tls?: boolean;
  tlsCa?: string;
  ca?: string;
  tlsCert?: string;
  tlsKey?: string;
}

/**
 * Flags win over the environment, which wins over the defaults. The token
 * falls back to the admin token `kairos dev` keeps in its data folder
 * (KAIROS_DATA_DIR, default .kairos), so the CLI works against a dev stack
 * without one.
 */
export function globalOptions(command: Command, io: CliIo): GlobalOptions {
  const raw = command.optsWithGlobals<RawGlobals>();
  const address = raw.address ?? coordinatorAddress(io);
  const token = raw.token ?? nonEmpty(io.env['KAIROS_TOKEN']) ?? devToken(io);
  return { address, token, json: raw.json === true, tls: tlsOptions(raw, io) };
}

/**
 * The coordinator's gRPC address from the environment: KAIROS_COORDINATOR (the
 * agent's variable too); KAIROS_ADDRESS, its former name, still works with a
 * warning; else 127.0.0.1 on KAIROS_GRPC_PORT (the coordinator's own port
 * variable), else the default.
 */
function coordinatorAddress(io: CliIo): string {
  const current = nonEmpty(io.env['KAIROS_COORDINATOR']);
  if (current !== undefined) return current;
  const former = nonEmpty(io.env['KAIROS_ADDRESS']);
  if (former !== undefined) {
    io.stderr.write('kairos: KAIROS_ADDRESS is deprecated; set KAIROS_COORDINATOR (the same variable the agent reads)\n');
    return former;
  }
  const port = nonEmpty(io.env['KAIROS_GRPC_PORT']);
  return port !== undefined && /^\d{1,5}$/.test(port) ? `127.0.0.1:${port}` : DEFAULT_ADDRESS;
}

/** `--ca` is `--tls-ca`; KAIROS_TLS_CA and KAIROS_TLS=true turn TLS on from the environment. */
function tlsOptions(given: RawGlobals, io: CliIo): TlsOptions | false {
  const caFromEnv = nonEmpty(io.env['KAIROS_TLS_CA']);
  const raw: RawGlobals = {
    ...given,
    tls: given.tls === true || ['true', '1'].includes(io.env['KAIROS_TLS'] ?? ''),
    ...(given.ca ?? given.tlsCa ?? caFromEnv ? { tlsCa: given.ca ?? given.tlsCa ?? caFromEnv } : {}),
  };
  if (raw.tlsCa === undefined && raw.tlsCert === undefined && raw.tlsKey === undefined) {
    return raw.tls === true ? {} : false;
  }
  if ((raw.tlsCert === undefined) !== (raw.tlsKey === undefined)) {
    const missing = raw.tlsCert === undefined ? '--tls-cert' : '--tls-key';
    throw new UsageError('mutual TLS needs both --tls-cert and --tls-key', missing);
  }
  const tls: TlsOptions = {};
  if (raw.tlsCa !== undefined) tls.caPem = readFlagFile(raw.tlsCa, '--tls-ca');
  if (raw.tlsCert !== undefined) tls.certPem = readFlagFile(raw.tlsCert, '--tls-cert');
  if (raw.tlsKey !== undefined) tls.keyPem = readFlagFile(raw.tlsKey, '--tls-key');
  return tls;
}

/**
 * Runs `use` with a client for the coordinator in `globals`, closing it after.
 * An unreachable coordinator is reported with its address.
 */
export async function withClient<T>(globals: GlobalOptions, use: (client: KairosClient) => Promise<T>): Promise<T> {
  const client = createKairosClient({ address: globals.address, token: globals.token, tls: globals.tls });
  try {
    return await use(client);
  } catch (error: unknown) {
    const failure = KairosError.from(error);
    if (failure.code !== KairosErrorCode.Unavailable) throw failure;
    // grpc-js appends an empty "Resolution note:" to connection failures.
    const reason = failure.message.replace(/\.?\s*Resolution note:\s*$/, '');
    throw new KairosError(failure.code, `coordinator at ${globals.address} is unavailable: ${reason}`, {
      cause: failure,
    });
  } finally {
    client.close();
  }
}

/** The dev stack's admin token, if `kairos dev` has written one. */
function devToken(io: CliIo): string | undefined {
  const file = path.join(nonEmpty(io.env['KAIROS_DATA_DIR']) ?? '.kairos', 'dev-token');
  try {
    return nonEmpty(readFileSync(file, 'utf8').trim());
  } catch {
    return undefined;
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
