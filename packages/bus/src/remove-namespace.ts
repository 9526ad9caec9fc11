import { connect } from "nats";
import { natsAuthOptions } from "./nats-auth";
import type { NatsCredentials } from "./nats-auth";
import { isMissingResource, streamKinds, streamNameOf } from "./nats-setup";

/**
 * Deletes a namespace's JetStream streams (and so their consumers): for tests and for operators
 * retiring a namespace. A namespace that has no stream is not an error. Credentials as for the bus
 * (in the URL, or a credentials file); the user needs `$JS.API.STREAM.DELETE.<stream>`.
 */
export async function removeNatsNamespace(url: string, namespace: string, credentials?: NatsCredentials): Promise<void> {
  const nc = await connect({ ...natsAuthOptions(url, credentials), name: "gw-remove-namespace" });
  try {
    const jsm = await nc.jetstreamManager();
    for (const kind of streamKinds) {
      await jsm.streams.delete(streamNameOf(namespace, kind)).catch((err: unknown) => {
        if (!isMissingResource(err)) throw err;
      });
    }
  } finally {
    await nc.close();
  }
}
