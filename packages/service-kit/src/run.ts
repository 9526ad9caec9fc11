import type { Logger } from "@gw/logger";
import { createLogger, flushLogger } from "@gw/logger";

export interface Stoppable {
  stop(): Promise<void>;
}

/**
 * The process edge of every entry point: start the service, then on SIGTERM/SIGINT stop it
 * (not ready → close server → drain → end pools) under a hard timeout, and exit. Signal handlers
 * are in place before start(), so a signal during start-up still ends in an orderly stop.
 */
export async function runUntilSignal(logger: Logger, start: () => Promise<Stoppable>, hardTimeoutMs = 30_000): Promise<void> {
  const exit = (code: number): never => {
    flushLogger(logger);
    process.exit(code);
  };
  let stopping = false;
  const started = start();
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    setTimeout(() => {
      logger.error({ hardTimeoutMs }, "shutdown timed out; exiting");
      exit(1);
    }, hardTimeoutMs);
    started
      .then((service) => service.stop())
      .then(() => {
        logger.info("stopped");
        exit(0);
      })
      .catch((err: unknown) => {
        logger.error({ err }, "error while stopping");
        exit(1);
      });
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
  try {
    await started;
  } catch (err) {
    logger.fatal({ err }, "failed to start");
    exit(1);
  }
}

/** A configuration error is one fatal line naming the key, then exit 1. */
export function exitOnConfigError(logger: Logger, err: unknown): never {
  logger.fatal({ err: (err as Error).message }, (err as Error).message);
  flushLogger(logger);
  process.exit(1);
}

/**
 * The start of every entry point: parse the environment (and anything else `load` reads), or log
 * one fatal line naming the bad key and exit 1; then the service's logger at the configured level.
 */
export function loadOrExit<T extends { LOG_LEVEL: string }>(service: string, bootLevel: string | undefined, load: () => T): { config: T; logger: Logger } {
  let config: T;
  try {
    config = load();
  } catch (err) {
    exitOnConfigError(createLogger({ service, level: bootLevel }), err);
  }
  return { config, logger: createLogger({ service, level: config.LOG_LEVEL }) };
}
