/**
 * The values `coffer run` and `coffer export` start from: every value the token may read directly in each
 * namespace (one call a page: GET /v1/kv/{ns}/?values=true), or — for `coffer run --fallback` while Coffer
 * cannot answer — the encrypted copy of the last ones fetched.
 */
import type { Coffer } from '../client/coffer.js';
import type { SourceValue } from './env-names.js';
import { CliError, EXIT } from './exit-codes.js';
import { formatAge, readFallback, writeFallback } from './fallback.js';
import { explain, isOutage } from './session.js';

export interface FallbackOptions {
  readonly file: string;
  readonly key: Buffer;
  readonly maxAgeMs: number;
}

export async function fetchValues(
  coffer: Coffer,
  namespaces: readonly string[],
): Promise<SourceValue[]> {
  const pages = await Promise.all(
    namespaces.map(async (namespace) => {
      try {
        return (await coffer.values(namespace)).map((v) => ({
          namespace,
          key: v.key,
          value: v.value,
          writerReadsAll: v.writer_reads_all,
        }));
      } catch (err) {
        throw Object.assign(err as object, { namespace });
      }
    }),
  );
  return pages.flat();
}

/**
 * Refuses (exit 3) a namespace that gave no value: not found — a typo, `payments/prd` — or holding nothing
 * this token may read. A program started without the values it was meant to have fails later and further
 * from the cause; `--allow-empty` is for the one that expects none.
 */
export function requireValues(
  values: readonly SourceValue[],
  namespaces: readonly string[],
  allowEmpty: boolean,
): void {
  if (allowEmpty) return;
  const empty = namespaces.filter((ns) => !values.some((v) => v.namespace === ns));
  if (empty.length > 0)
    throw new CliError(
      `${empty.join(', ')}: no value there that this token may read — a namespace not found (a typo?), or none of its keys readable with this token; --allow-empty goes on without`,
      EXIT.notFound,
    );
}

/**
 * The values from Coffer (and the fallback copy renewed), or from the copy when Coffer cannot answer,
 * saying so on stderr. An answer that refuses (401, 403, 404…) is never covered by the copy.
 */
export async function valuesWithFallback(
  coffer: Coffer,
  namespaces: readonly string[],
  fallback: FallbackOptions | undefined,
  warn: (line: string) => void,
): Promise<SourceValue[]> {
  try {
    const values = await fetchValues(coffer, namespaces);
    if (fallback) await writeFallback(fallback.file, fallback.key, coffer.url, namespaces, values);
    return values;
  } catch (err) {
    const namespace = (err as { namespace?: string }).namespace ?? namespaces.join(', ');
    const explained = explain(err, coffer, namespace);
    if (!fallback || !isOutage(err)) throw explained;
    const copy = await readFallback(
      fallback.file,
      fallback.key,
      coffer.url,
      namespaces,
      fallback.maxAgeMs,
    ).catch((why: unknown) => {
      throw why instanceof CliError
        ? new CliError(`${(explained as Error).message}; ${why.message}`, EXIT.unavailable)
        : why;
    });
    warn(
      `coffer: ${(explained as Error).message}; starting from the fallback copy ${fallback.file}, written ${formatAge(Date.now() - copy.writtenAt.getTime())} ago (${copy.writtenAt.toISOString()})`,
    );
    return copy.values;
  }
}
