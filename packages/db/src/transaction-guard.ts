import { AsyncLocalStorage } from "node:async_hooks";

/**
 * Detects a `Db` method called from inside that same `Db`'s transaction callback. On PGlite (one
 * connection) such a call waits for the transaction that is waiting for it: a silent hang. On a pool
 * it runs on another connection, outside the transaction. Both are bugs, so both refuse it loudly.
 */
export interface TransactionGuard {
  /** Throws when the caller is inside an open transaction of this `Db`. */
  assertOutside(method: string): void;
  /** Runs the transaction callback, marking its async context as inside the transaction. */
  run<T>(fn: () => Promise<T>): Promise<T>;
}

export function createTransactionGuard(): TransactionGuard {
  // The flag is cleared when the callback settles, so work the callback merely started (which
  // inherits the async context) may still use the Db once the transaction is over.
  const storage = new AsyncLocalStorage<{ open: boolean }>();
  // On Node 20 an enabled AsyncLocalStorage installs async hooks that run on every promise and
  // tick of the whole process (about 5-10 % of a busy service's CPU). Enable it only while a
  // transaction is open: disable() once the last one has settled removes the hooks again.
  let running = 0;
  return {
    assertOutside(method) {
      if (storage.getStore()?.open) {
        throw new Error(`db.${method}() called inside db.transaction(); use the transaction handle passed to the callback`);
      }
    },
    async run(fn) {
      const state = { open: true };
      running++;
      try {
        return await storage.run(state, fn);
      } finally {
        state.open = false;
        if (--running === 0) storage.disable();
      }
    },
  };
}
