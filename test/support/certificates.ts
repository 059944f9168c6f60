/** A self-signed TLS certificate for 127.0.0.1 (openssl, a P-256 key, one day), for servers under test. */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** Writes `<name>.crt` and `<name>.key` into `dir`; the certificate is its own CA. */
export function selfSignedCertificate(dir: string, name = 'tls'): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}
