import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { hasBody } from "./body-rules";

/** More of a refused body than any route takes: past this it is not worth reading. */
const DISCARD_LIMIT_BYTES = 64 * 1024 * 1024;
/** How long a closing connection waits for the rest of a refused body (nginx's lingering_time). */
const LINGER_MS = 30_000;

/**
 * After a refusal that left (some of) the body unread: the rest is read and thrown away, so a
 * client still sending gets the answer rather than a reset. Closing a socket with unread bytes in
 * it resets the connection, and the client's stack then drops the answer it had already received
 * (EPIPE or ECONNRESET instead of the 401). It costs bandwidth, never memory; a body declared or
 * found larger than DISCARD_LIMIT_BYTES is cut.
 */
export function discardRestOfBody(req: IncomingMessage, res: ServerResponse): void {
  if (req.complete || !hasBody(req)) return;
  if (Number(req.headers["content-length"]) > DISCARD_LIMIT_BYTES) {
    res.setHeader("connection", "close");
    return;
  }
  let seen = 0;
  req.on("data", (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > DISCARD_LIMIT_BYTES) req.socket.destroy();
  });
  req.resume();
  lingerOnClose(req.socket);
}

/**
 * When the client asked to close after the answer (`connection: close`), node closes the socket as
 * soon as the answer is written, with the body still arriving. Instead: a lingering close, as web
 * servers do it. The answer is followed by our FIN, the rest of the body is read (and dropped) until
 * the client closes its side, and the socket is cut only after LINGER_MS.
 */
function lingerOnClose(socket: Socket): void {
  const closable = socket as Socket & { destroySoon?: () => void };
  closable.destroySoon = () => {
    socket.end();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
  };
}
