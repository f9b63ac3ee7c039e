/**
 * Certificates made at test time with the openssl command line: a CA, a
 * server certificate for 127.0.0.1/localhost and a client certificate signed
 * by it (for mTLS). Short-lived (one day) and written to a folder of the
 * caller's. Nothing is committed.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface TestPki {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function key(name: string, cwd: string): string {
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', `${name}.key`], cwd);
  return path.join(cwd, `${name}.key`);
}

/** A CA named `name` in `dir`, with a server and a client certificate signed by it. */
export function makeTestPki(dir: string, name = 'kairos-test'): TestPki {
  mkdirSync(dir, { recursive: true });
  key(`${name}-ca`, dir);
  openssl(['req', '-x509', '-new', '-key', `${name}-ca.key`, '-out', `${name}-ca.crt`, '-days', '1', '-subj', `/CN=${name} CA`], dir);
  const sign = (leaf: string, extensions: string) => {
    key(leaf, dir);
    openssl(['req', '-new', '-key', `${leaf}.key`, '-out', `${leaf}.csr`, '-subj', `/CN=${leaf}`], dir);
    writeFileSync(path.join(dir, `${leaf}.ext`), extensions);
    openssl(
      ['x509', '-req', '-in', `${leaf}.csr`, '-CA', `${name}-ca.crt`, '-CAkey', `${name}-ca.key`, '-CAcreateserial', '-out', `${leaf}.crt`, '-days', '1', '-extfile', `${leaf}.ext`],
      dir,
    );
  };
  sign(`${name}-server`, 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  sign(`${name}-client`, 'extendedKeyUsage=clientAuth\n');
  return {
    dir,
    caCert: path.join(dir, `${name}-ca.crt`),
    serverCert: path.join(dir, `${name}-server.crt`),
    serverKey: path.join(dir, `${name}-server.key`),
    clientCert: path.join(dir, `${name}-client.crt`),
    clientKey: path.join(dir, `${name}-client.key`),
  };
}
