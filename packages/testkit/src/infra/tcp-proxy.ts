import { connect, createServer, type Server, type Socket } from "node:net";

export interface TcpProxy {
  /** The port clients connect to; it stays the same across cut() and restore(). */
  port: number;
  /** Stops listening and drops every open connection: to its clients, the target is gone. */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A TCP relay in front of a shared service (Redis, Postgres), so a test can take that service away
 * from the gateway and give it back without stopping the server other tests use. It forwards bytes
 * as they come (no Nagle delay on either side), so the benchmark also uses it as the cheapest
 * possible process hop.
 */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  };
  let server: Server | undefined;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const srv = createServer({ noDelay: true }, (client) => {
        const upstream = connect({ port: target.port, host: target.host, noDelay: true });
        track(client);
        track(upstream);
        client.pipe(upstream).pipe(client);
        client.on("error", () => upstream.destroy());
        upstream.on("error", () => client.destroy());
      });
      srv.once("error", reject);
      srv.listen(port, "127.0.0.1", () => {
        port = (srv.address() as { port: number }).port;
        server = srv;
        resolve();
      });
    });
  const cut = async () => {
    const srv = server;
    server = undefined;
    for (const s of sockets) s.destroy();
    if (srv) await new Promise<void>((r) => srv.close(() => r()));
  };
  await listen();
  return {
    get port() {
      return port;
    },
    cut,
    restore: listen,
    close: cut,
  };
}
