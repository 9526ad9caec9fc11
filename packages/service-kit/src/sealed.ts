import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

/**
 * AES-256-GCM sealing for secrets: provider credentials at rest (under the operator's master key)
 * and in transit from ingress to the other services (under a key derived from the internal secret).
 * The sealed form is `v1.<iv>.<tag>.<ciphertext>`, base64url; a wrong key or any changed byte fails
 * to open. `context` binds a sealed value to its purpose, so one cannot be replayed as another.
 */
export class Sealer {
  private readonly key: Buffer;

  constructor(secret: string | Buffer, purpose: string) {
    this.key = Buffer.from(hkdfSync("sha256", secret, Buffer.alloc(0), `gw-sealed:${purpose}`, 32));
  }

  seal(plaintext: string, context = ""): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(Buffer.from(context));
    const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return ["v1", iv, cipher.getAuthTag(), ciphertext].map((p) => (typeof p === "string" ? p : p.toString("base64url"))).join(".");
  }

  /** The plaintext, or undefined when the value was not sealed by this key for this context. */
  open(sealed: string, context = ""): string | undefined {
    const [version, iv, tag, ciphertext] = sealed.split(".");
    if (version !== "v1" || !iv || !tag || ciphertext === undefined) return undefined;
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(iv, "base64url"));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, "base64url")), decipher.final()]).toString("utf8");
    } catch {
      return undefined;
    }
  }
}
