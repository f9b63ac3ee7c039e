/**
 * TLS for both servers from PEM files that are re-read while the coordinator
 * runs, so a renewed certificate (cert-manager, a cron'd certbot) is served
 * without a restart:
 * - gRPC: grpc-js's file-watching certificate provider, re-reading every
 *   `reloadMs`; with a client CA, client certificates are required (mTLS).
 * - REST: the https server's secure context is replaced when the files'
 *   modification times change (checked every `reloadMs`). A pair that fails
 *   to load (a half-written file) is logged and the old one stays in use.
 */
import { readFileSync, statSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { TlsFiles } from './config';

export function grpcServerCredentials(tls: TlsFiles | undefined): grpc.ServerCredentials {
  if (tls === undefined) return grpc.ServerCredentials.createInsecure();
  // Fail at start, naming the file, rather than serve a listener that refuses every handshake.
  loadPair(tls);
  if (tls.clientCaFile !== undefined) readPem(tls.clientCaFile, 'KAIROS_TLS_CLIENT_CA');
  const provider = new grpc.experimental.FileWatcherCertificateProvider({
    certificateFile: tls.certFile,
    privateKeyFile: tls.keyFile,
    ...(tls.clientCaFile === undefined ? {} : { caCertificateFile: tls.clientCaFile }),
    refreshIntervalMs: tls.reloadMs,
  });
  // One provider serves both roles: it reads the identity pair and, for mTLS, the client CA.
  return tls.clientCaFile === undefined
    ? grpc.experimental.createCertificateProviderServerCredentials(provider, null, false)
    : grpc.experimental.createCertificateProviderServerCredentials(provider, provider, true);
}

export interface HttpsPair {
  key: Buffer;
  cert: Buffer;
}

export function loadPair(tls: TlsFiles): HttpsPair {
  return { cert: readPem(tls.certFile, 'KAIROS_TLS_CERT'), key: readPem(tls.keyFile, 'KAIROS_TLS_KEY') };
}

/** Calls `apply` with a fresh pair whenever the certificate or key file changes; returns a stop function. */
export function watchPair(tls: TlsFiles, apply: (pair: HttpsPair) => void, logger: Logger): () => void {
  const stamp = () => `${mtime(tls.certFile)}/${mtime(tls.keyFile)}`;
  let last = stamp();
  const timer = setInterval(() => {
    const now = stamp();
    if (now === last) return;
    try {
      apply(loadPair(tls));
      last = now;
      logger.info({ certFile: tls.certFile }, 'TLS certificate reloaded');
    } catch (error: unknown) {
      logger.warn({ err: error }, 'TLS certificate changed but could not be loaded; still serving the previous one');
    }
  }, tls.reloadMs);
  timer.unref();
  return () => clearInterval(timer);
}

function mtime(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return -1;
  }
}

function readPem(file: string, variable: string): Buffer {
  let text: Buffer;
  try {
    text = readFileSync(file);
  } catch (error: unknown) {
    throw new Error(`invalid configuration: ${variable}: cannot read ${file}: ${(error as Error).message}`);
  }
  if (!text.includes('-----BEGIN')) throw new Error(`invalid configuration: ${variable}: ${file} is not a PEM file`);
  return text;
}
