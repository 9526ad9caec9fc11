import fc from "fast-check";
import type { Envelope } from "./route-table";

/**
 * Which key a case sends. The secrets exist only once the gateway runs, so a case names the kind
 * and the runner (properties.ts) turns it into headers: cases stay printable and replayable.
 */
export const keyChoices = [
  "valid",
  "valid-x-api-key",
  "valid-lowercase-bearer",
  "missing",
  "empty-bearer",
  "bearer-only",
  "basic",
  "malformed",
  "unknown",
  "revoked",
  "disabled",
  "long",
  "latin1",
  "two-keys",
] as const;
export type KeyChoice = (typeof keyChoices)[number];

export type Cut = "after-head" | "mid-body" | "after-first-byte";

/** What a case must get, beyond the properties every case has. */
export interface CaseExpectation {
  /** Allowed statuses; undefined: any status below 500. */
  statuses?: readonly number[];
}

export interface CaseInit {
  cls: string;
  /** A provider's own 4xx may be relayed; else any 4xx must be the gateway's own (see FuzzClass). */
  mayRelay: boolean;
  method: string;
  /** Request target as sent on the wire (path and query), never normalised. */
  target: string;
  /** The envelope a refusal must carry; undefined: either of the two. */
  envelope?: Envelope;
  key: KeyChoice;
  headers?: Record<string, string>;
  body?: Buffer;
  /** A body of this many bytes, streamed from a small buffer (oversized cases), never held whole. */
  streamed?: { bytes: number; chunked: boolean };
  expect?: CaseExpectation;
  /** Sent on a keep-alive connection (the target's agent) rather than one closed after the answer. */
  keepAlive?: boolean;
  /** The client goes away early: after the head, halfway through the body, or at the answer's first byte. */
  cut?: Cut;
  /** What the generator did, in words, for the report. */
  note: string;
}

/** One request of the fuzz: everything needed to send it again, and a short printable form. */
export interface FuzzCase extends CaseInit {
  headers: Record<string, string>;
  [fc.toStringMethod](): string;
}

export function fuzzCase(init: CaseInit): FuzzCase {
  const c = { ...init, headers: init.headers ?? {} } as FuzzCase;
  Object.defineProperty(c, fc.toStringMethod, { value: () => describeCase(c), enumerable: false });
  return c;
}

export function describeCase(c: CaseInit): string {
  const lines = [`[${c.cls}] ${c.method} ${preview(Buffer.from(c.target, "latin1"), 300)}  key=${c.key}`, `  note: ${c.note}`];
  const headers = Object.entries(c.headers ?? {});
  if (headers.length > 0) lines.push(`  headers: ${headers.map(([k, v]) => `${k}: ${preview(Buffer.from(v, "latin1"), 120)}`).join(" | ")}`);
  if (c.body) lines.push(`  body (${c.body.length} bytes): ${preview(c.body, 400)}`);
  if (c.cut) lines.push(`  the client goes away ${c.cut}`);
  if (c.streamed) lines.push(`  body: ${c.streamed.bytes} bytes streamed${c.streamed.chunked ? " (chunked)" : " (content-length)"}`);
  return lines.join("\n");
}

/** Printable bytes: ASCII as is, the rest as \xNN, long runs cut in the middle. */
export function preview(bytes: Buffer, max: number): string {
  const show = (b: Buffer) =>
    [...b].map((x) => (x >= 0x20 && x < 0x7f && x !== 0x5c ? String.fromCharCode(x) : `\\x${x.toString(16).padStart(2, "0")}`)).join("");
  if (bytes.length <= max) return show(bytes);
  const head = Math.floor((max * 2) / 3);
  return `${show(bytes.subarray(0, head))}…(${bytes.length - head - (max - head)} bytes)…${show(bytes.subarray(bytes.length - (max - head)))}`;
}
