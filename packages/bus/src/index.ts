export { createInProcessBus } from "./in-process-bus";
export type { InProcessBusOptions } from "./in-process-bus";
export { createNatsBus } from "./nats-bus";
export type { NatsBusOptions } from "./nats-bus";
export { NatsCredentials, readNatsCredentials } from "./nats-auth";
export { BusUsageError, InvalidMessageError, PayloadTooLargeError } from "./messages";
export type {
  BroadcastHandler,
  Bus,
  BusLogger,
  ConsumeOptions,
  Consumer,
  EnqueueOptions,
  MessageMeta,
  WorkHandler,
} from "./types";
export { removeNatsNamespace } from "./remove-namespace";
