/**
 * Waiting for a condition instead of a time: `check` is tried until it holds (returns true, or resolves
 * without throwing an assertion), then once more fails loudly with its own error when `timeout` passes.
 * Resolves to the milliseconds it took, for a test that bounds how soon something happens.
 * Generous by default: a two-core machine under the whole suite is slow, and a condition met early costs
 * nothing.
 */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  options: { readonly timeout?: number; readonly interval?: number; readonly what?: string } = {},
): Promise<number> {
  const { timeout = 10_000, interval = 25 } = options;
  const started = Date.now();
  const until = started + timeout;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return Date.now() - started;
      last = undefined;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= until) break;
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
  if (last instanceof Error) throw last;
  throw new Error(`${options.what ?? 'the condition'} did not hold within ${timeout} ms`);
}
