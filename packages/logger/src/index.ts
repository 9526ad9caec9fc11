import { pino, type Logger, type LoggerOptions } from "pino";
import pretty from "pino-pretty";
import { Redactor } from "./redact";

export type { Logger } from "pino";
export { isSensitiveName, Redactor, secretForms } from "./redact";

export interface LoggerConfig {
  service: string;
  level?: string;
  /** Tests pass a destination to capture lines; production writes to stdout. */
  destination?: NodeJS.WritableStream;
  /** Values censored wherever they appear in a line (more may be added with `redactSecrets`). */
  secrets?: Iterable<string | undefined | null>;
  /**
   * Lines for a person (pino-pretty: one coloured line per event) rather than JSON for a collector.
   * Default: when stdout is a terminal.
   */
  pretty?: boolean;
}

const redactorSym = Symbol("gw.redactor");

/**
 * Keys and credentials never reach a log line, at any level and any depth (see redact.ts). The
 * work is done on the serialised line, so it is paid only by lines actually written.
 */
export function createLogger(config: LoggerConfig): Logger {
  const redactor = new Redactor(config.secrets);
  const options: LoggerOptions = {
    level: config.level ?? "info",
    base: { service: config.service },
    hooks: { streamWrite: (line) => redactor.line(line) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  // Children are made with Object.create, so they find their root's redactor through this property.
  const withRedactor = (logger: Logger): Logger => Object.defineProperty(logger, redactorSym, { value: redactor });
  // At a terminal: readable lines, written as they come (a person is watching); redacted first, as
  // the hook runs before any stream.
  if (config.pretty ?? (config.destination === undefined && process.stdout.isTTY === true)) {
    const destination = config.destination ?? 1;
    return withRedactor(
      pino(options, pretty({ colorize: config.destination === undefined, sync: true, destination, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" })),
    );
  }
  if (config.destination) return withRedactor(pino(options, config.destination));
  // pino writes asynchronously through sonic-boom, so logging never blocks the request path. Lines
  // are batched up to 4 KiB; a quiet process still writes within a second (a warning that Redis
  // is down must not wait for 4 KiB of other lines). The flush is timed from the first line
  // buffered, not by an interval: an idle process then never wakes for it (each wake-up, and
  // sonic-boom's empty write, costs CPU on every idle pod).
  const destination = pino.destination({ dest: 1, sync: false, minLength: 4096 });
  let flushDue = false;
  const flush = () => {
    flushDue = false;
    try {
      destination.flush();
    } catch {
      // not open yet, or already closed
    }
  };
  options.hooks = {
    streamWrite: (line) => {
      if (!flushDue) {
        flushDue = true;
        setTimeout(flush, 1_000).unref();
      }
      return redactor.line(line);
    },
  };
  return withRedactor(pino(options, destination));
}

/**
 * Tells a logger (and every child of it) the secrets this process holds, once at start: the admin
 * token, the internal secret, the master key, the providers' keys. Each is censored from then on,
 * in any line, also base64- or URL-encoded.
 */
export function redactSecrets(logger: Logger, secrets: Iterable<string | undefined | null>): void {
  const redactor: unknown = Reflect.get(logger, redactorSym);
  if (redactor instanceof Redactor) redactor.add(secrets);
}

/**
 * One child per request: every line it writes carries the request id. The child is made when the
 * request first logs, which most never do: making it serialises its bindings, a few µs of every
 * request's CPU in ingress and in inference.
 */
export function requestLogger(base: Logger, requestId: string): Logger {
  let child: Logger | undefined;
  const made = (): Logger => (child ??= base.child({ requestId }));
  return new Proxy(base, {
    get(_base, property) {
      const logger = made();
      const value: unknown = Reflect.get(logger, property, logger);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(logger) : value;
    },
    set: (_base, property, value) => Reflect.set(made(), property, value),
    has: (_base, property) => Reflect.has(made(), property),
  });
}

/**
 * Writes out buffered lines synchronously; called just before process.exit so the last lines
 * (why we stopped) are not lost. Child loggers share their parent's destination.
 */
export function flushLogger(logger: Logger): void {
  const stream: unknown = Reflect.get(logger, pino.symbols.streamSym);
  const flushSync = (stream as { flushSync?: () => void } | undefined)?.flushSync;
  try {
    flushSync?.call(stream);
  } catch {
    // nothing buffered, or the destination is already closed
  }
}
