import { createNatsBus, type Bus, type NatsCredentials } from "@gw/bus";
import type { Logger } from "@gw/logger";

/** The environment every mesh process connects to NATS with (its config.ts parses it). */
export interface ServiceBusEnv {
  NATS_URL: string;
  NATS_NAMESPACE: string;
  GATEWAY_INTERNAL_SECRET: string;
}

/**
 * A mesh process's bus: logged in with its own NATS credentials (read from NATS_CREDS at start, so
 * a bad file is a config error), signing and checking every message with the internal secret.
 */
export function connectServiceBus(env: ServiceBusEnv, credentials: NatsCredentials | undefined, logger: Logger, name: string): Promise<Bus> {
  return createNatsBus({ url: env.NATS_URL, credentials, secret: env.GATEWAY_INTERNAL_SECRET, namespace: env.NATS_NAMESPACE, logger, name });
}
