import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import type { MsgHdrs } from "nats";

/**
 * Every message the NATS bus sends carries this header: HMAC-SHA256, base64url, over the NATS
 * subject (namespace included), the JetStream message id (empty for broadcasts) and the payload
 * bytes, under a key derived from GATEWAY_INTERNAL_SECRET. Receivers check it before parsing, so a
 * client that can reach NATS but does not hold the secret cannot start work, finish a job, settle
 * tokens or drop cached identities. Application headers (request id, trace context) are not
 * covered: they steer logs and traces, never what a message does.
 */
export const SIGNATURE_HEADER = "gw-signature";
/** JetStream's dedupe header, which the bus fills with the message id it signs. */
export const MSG_ID_HEADER = "Nats-Msg-Id";

/** Its own purpose string, so this key is unrelated to the identity header's or sealing's. */
const KEY_INFO = "gw-bus-signature:v1";

export interface MessageSigner {
  sign(subject: string, msgId: string, payload: Uint8Array): string;
  /** "ok", or why not: the reason is logged, the message never is. */
  verify(subject: string, headers: MsgHdrs | undefined, payload: Uint8Array): "ok" | "unsigned" | "bad signature";
}

export function createMessageSigner(secret: string): MessageSigner {
  if (typeof secret !== "string" || secret.length < 16) {
    throw new Error("the NATS bus needs the internal secret (GATEWAY_INTERNAL_SECRET, at least 16 characters) to sign messages");
  }
  const key = Buffer.from(hkdfSync("sha256", secret, Buffer.alloc(0), KEY_INFO, 32));
  const mac = (subject: string, msgId: string, payload: Uint8Array): Buffer =>
    // The subject cannot hold a newline and the id is length-prefixed, so no two
    // (subject, id, payload) triples share an input.
    createHmac("sha256", key)
      .update(`${subject}\n${Buffer.byteLength(msgId)}\n${msgId}\n`)
      .update(payload)
      .digest();
  return {
    sign: (subject, msgId, payload) => mac(subject, msgId, payload).toString("base64url"),
    verify(subject, headers, payload) {
      const given = headers?.get(SIGNATURE_HEADER) ?? "";
      if (given === "") return "unsigned";
      const expected = mac(subject, headers?.get(MSG_ID_HEADER) ?? "", payload);
      // Compare bytes of the text as sent: decoding first would forgive stray characters.
      const givenBytes = Buffer.from(given);
      const expectedBytes = Buffer.from(expected.toString("base64url"));
      return givenBytes.length === expectedBytes.length && timingSafeEqual(givenBytes, expectedBytes) ? "ok" : "bad signature";
    },
  };
}
