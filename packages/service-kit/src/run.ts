import type { Logger } from "@gw/logger";
import { flushLogger } from "@gw/logger";

export interface Stoppable {
  stop(): Promise<void>;
}

/**
 * The process edge of every entry point: start the service, then on SIGTERM/SIGINT stop it
 * (not ready → close server → drain → end pools) under a hard timeout, and exit.
 */
export async function runUntilSignal(logger: Logger, start: () => Promise<Stoppable>, hardTimeoutMs = 30_000): Promise<void> {
  let service: Stoppable;
  try {
    service = await start();
  } catch (err) {
    logger.fatal({ err }, "failed to start");
    flushLogger(logger);
    process.exit(1);
  }
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    const timer = setTimeout(() => {
      logger.error({ hardTimeoutMs }, "shutdown timed out; exiting");
      flushLogger(logger);
      process.exit(1);
    }, hardTimeoutMs);
    timer.unref();
    service
      .stop()
      .then(() => {
        logger.info("stopped");
        flushLogger(logger);
        process.exit(0);
      })
      .catch((err: unknown) => {
        logger.error({ err }, "error while stopping");
        flushLogger(logger);
        process.exit(1);
      });
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
}

/** A configuration error is one fatal line naming the key, then exit 1. */
export function exitOnConfigError(logger: Logger, err: unknown): never {
  logger.fatal({ err: (err as Error).message }, (err as Error).message);
  flushLogger(logger);
  process.exit(1);
}
