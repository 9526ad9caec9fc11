import { connect } from "nats";
import { isMissingResource, streamNameOf } from "./nats-setup";

/**
 * Deletes a namespace's JetStream stream (and so its consumers): for tests and for operators
 * retiring a namespace. A namespace that has no stream is not an error.
 */
export async function removeNatsNamespace(url: string, namespace: string): Promise<void> {
  const nc = await connect({ servers: url, name: "gw-remove-namespace" });
  try {
    const jsm = await nc.jetstreamManager();
    await jsm.streams.delete(streamNameOf(namespace)).catch((err: unknown) => {
      if (!isMissingResource(err)) throw err;
    });
  } finally {
    await nc.close();
  }
}
