/** Channel credentials from the client's `tls` option. */
import { credentials, type ChannelCredentials } from '@grpc/grpc-js';
import { KairosError, KairosErrorCode } from './error';

/** PEM-encoded material for TLS; any field may be omitted. */
export interface TlsOptions {
  /** Certificates to trust for the coordinator; default: the system's roots. */
  caPem?: string | Buffer;
  /** Client certificate chain, for mutual TLS (needs keyPem). */
  certPem?: string | Buffer;
  /** Client private key, for mutual TLS (needs certPem). */
  keyPem?: string | Buffer;
}

/**
 * `false` or unset: plaintext (local development). An object: TLS, mutual when
 * both certPem and keyPem are given.
 */
export function channelCredentials(tls: TlsOptions | false | undefined): ChannelCredentials {
  if (tls === undefined || tls === false) return credentials.createInsecure();
  if ((tls.certPem === undefined) !== (tls.keyPem === undefined)) {
    const missing = tls.certPem === undefined ? 'tls.certPem' : 'tls.keyPem';
    throw new KairosError(KairosErrorCode.InvalidArgument, 'mutual TLS needs both tls.certPem and tls.keyPem', {
      field: missing,
    });
  }
  return credentials.createSsl(bytes(tls.caPem), bytes(tls.keyPem), bytes(tls.certPem));
}

function bytes(pem: string | Buffer | undefined): Buffer | null {
  if (pem === undefined) return null;
  return typeof pem === 'string' ? Buffer.from(pem, 'utf8') : pem;
}
