// Loaded with --import into Portkey's process (and nothing else's). Two changes around the stock
// server, none on its request path:
// - Portkey's Node server listens on every interface and has no option for the address; on a shared
//   machine the benchmark must not open a proxy to the network, so a listen() given a port and no
//   host gets 127.0.0.1 (where the benchmark's upstream and mesh listen too).
// - It installs no SIGTERM handler, so the benchmark's stop would read as a crash: exit 0 instead.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" && (args[1] === undefined || typeof args[1] === "function")) {
    if (args[1] === undefined) args[1] = "127.0.0.1";
    else args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};

process.once("SIGTERM", () => process.exit(0));
