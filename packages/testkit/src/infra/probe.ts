import { connect } from "node:net";

/**
 * Opens a TCP connection, optionally sends `send`, and resolves true if the first bytes back match
 * `expect` within `timeoutMs`. A raw handshake instead of a client library: a missing server must
 * cost a fast `false`, not reconnect loops or unhandled error events.
 */
export function probeTcp(options: { host: string; port: number; send?: string; expect: RegExp; timeoutMs?: number }): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: options.host, port: options.port });
    let received = "";
    const finish = (ok: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => finish(false), options.timeoutMs ?? 1_000);
    socket.on("connect", () => {
      if (options.send !== undefined) socket.write(options.send);
    });
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("utf8");
      if (options.expect.test(received)) finish(true);
      else if (received.includes("\n")) finish(false); // a full line that is not the answer we want
    });
    socket.on("error", () => finish(false));
    socket.on("close", () => finish(false));
  });
}
