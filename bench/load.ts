/**
 * One load run with autocannon, in its own process so that `taskset` can pin the client to a core
 * away from the server. Reads a LoadSpec as JSON from argv[2]; prints a LoadResult as JSON on stdout.
 */
import autocannon from 'autocannon';

export interface LoadSpec {
  readonly url: string;
  readonly method: 'GET' | 'PUT' | 'POST';
  readonly path: string;
  readonly token: string;
  readonly connections: number;
  readonly seconds: number;
  /** For writes: a JSON body; `{n}` in the path is replaced by a per-request counter. */
  readonly body?: string;
}

export interface LoadResult {
  readonly requestsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  readonly non2xx: number;
  readonly total: number;
}

async function run(spec: LoadSpec): Promise<LoadResult> {
  let n = 0;
  const headers: Record<string, string> = { authorization: `Bearer ${spec.token}` };
  if (spec.body !== undefined) headers['content-type'] = 'application/json';
  const result = await autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: spec.seconds,
    requests: [{
      method: spec.method,
      headers,
      ...(spec.body === undefined ? {} : { body: spec.body }),
      setupRequest: (req) => ({ ...req, path: spec.path.replace('{n}', String(n++)) }),
    }],
  });
  return {
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    total: result.requests.total,
  };
}

run(JSON.parse(process.argv[2]!) as LoadSpec).then(
  (result) => process.stdout.write(JSON.stringify(result)),
  (err: unknown) => {
    process.stderr.write(`load run failed: ${String(err)}\n`);
    process.exit(1);
  },
);
