/**
 * Polls `condition` every 10 ms until it holds; throws, naming `what`, after `timeoutMs`. A test
 * gives a deadline shorter than what it rules out (a wait ending by itself), so that passing
 * requires the event, not the time.
 */
export async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Whether `promise` has settled (either way) by the end of a few turns of the event loop: for a
 * wait that must still be pending, checked without a clock.
 */
export async function settledSoon(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  return done;
}
