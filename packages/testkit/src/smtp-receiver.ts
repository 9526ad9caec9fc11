import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

export interface ReceivedMail {
  from: string | undefined;
  to: string[];
  subject: string;
  /** The text body, quoted-printable undone. */
  text: string;
  auth: { username: string; password: string } | undefined;
}

export interface SmtpReceiver {
  /** `smtp://user:password@127.0.0.1:<port>`: what GATEWAY_SMTP_URL takes. */
  url: string;
  messages: ReceivedMail[];
  close(): Promise<void>;
}

/**
 * A mail server on a local port (nodemailer's smtp-server) that keeps what it is sent, for tests
 * of mail the gateway sends. Plain SMTP with a password (no TLS on loopback).
 */
export async function startSmtpReceiver(credentials = { username: "gateway", password: "smtp-test-password" }): Promise<SmtpReceiver> {
  const messages: ReceivedMail[] = [];
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === credentials.username && auth.password === credentials.password) return callback(null, { user: auth.username });
      callback(new Error("Invalid username or password"));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        const split = raw.indexOf("\r\n\r\n");
        const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, " ");
        const body = raw.slice(split + 4);
        const header = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, "im").exec(head)?.[1]?.trim();
        const quoted = /quoted-printable/i.test(header("content-transfer-encoding") ?? "");
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined,
          to: session.envelope.rcptTo.map((r) => r.address),
          subject: header("subject") ?? "",
          text: quoted ? decodeQuotedPrintable(body) : body,
          auth: session.user ? { username: String(session.user), password: credentials.password } : undefined,
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://${credentials.username}:${credentials.password}@127.0.0.1:${port}`,
    messages,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function decodeQuotedPrintable(text: string): string {
  const bytes = text.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  return Buffer.from(bytes, "latin1").toString("utf8");
}
