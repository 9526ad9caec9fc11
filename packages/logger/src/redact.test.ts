import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, redactSecrets, requestLogger } from "./index";
import { isSensitiveName, Redactor, secretForms } from "./redact";

/** A trace-level logger whose lines are kept as written (text) and parsed. */
function capture(secrets?: string[]) {
  const destination = new PassThrough();
  let text = "";
  destination.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
  const logger = createLogger({ service: "test", level: "trace", destination, secrets });
  const written = async () => {
    await new Promise((resolve) => setImmediate(resolve));
    return {
      text,
      lines: text
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    };
  };
  return { logger, written };
}

const platformKey = `gw_live_${"A1b2C3d4".repeat(5)}`;

describe("logger redaction", () => {
  it("when credentials sit in fields named for them at any depth, in objects and header-pair arrays, then only their values are censored", async () => {
    const { logger, written } = capture();
    logger.info(
      {
        req: {
          headers: {
            Authorization: "Bearer abc",
            "Proxy-Authorization": "Basic xyz",
            "x-api-key": "k1",
            "api-key": "k2",
            cookie: "c=1",
            "set-cookie": ["s=1"],
          },
        },
        upstream: { attempts: [{ body: { api_key: "k3", apiKey: "k4", client_secret: "k5", password: "k6", credentials: { openai: "k7" } } }] },
        internal: { "x-gw-credentials": "v1.sealed", "x-gw-identity": "v1.signed", access_token: "t1", refresh_token: "t2", GATEWAY_MASTER_KEY: "m" },
        rawHeaders: ["content-type", "application/json", "X-Api-Key", "k8"],
        usage: { input_tokens: 12, max_tokens: 100, key_id: "key_1", token: 3 },
      },
      "call",
    );
    const { lines, text } = await written();
    expect(lines[0]).toMatchObject({
      req: {
        headers: {
          Authorization: "[redacted]",
          "Proxy-Authorization": "[redacted]",
          "x-api-key": "[redacted]",
          "api-key": "[redacted]",
          cookie: "[redacted]",
          "set-cookie": "[redacted]",
        },
      },
      upstream: {
        attempts: [{ body: { api_key: "[redacted]", apiKey: "[redacted]", client_secret: "[redacted]", password: "[redacted]", credentials: "[redacted]" } }],
      },
      internal: {
        "x-gw-credentials": "[redacted]",
        "x-gw-identity": "[redacted]",
        access_token: "[redacted]",
        refresh_token: "[redacted]",
        GATEWAY_MASTER_KEY: "[redacted]",
      },
      rawHeaders: ["content-type", "application/json", "X-Api-Key", "[redacted]"],
      // counts and ids that merely sound alike stay readable
      usage: { input_tokens: 12, max_tokens: 100, key_id: "key_1", token: 3 },
    });
    for (const value of ["abc", "xyz", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "v1.sealed", "v1.signed", "t1", "t2", "s=1"]) {
      expect(text).not.toContain(`"${value}"`);
    }
  });

  it("when a platform key or a told secret appears in a message, an error's message and stack, a child's bindings or a nested array, then it is censored there too", async () => {
    const { logger, written } = capture();
    const adminToken = "gw_admin_0123456789abcdefghijklmnop";
    redactSecrets(logger, [adminToken, undefined]);
    const child = logger.child({ component: "ingress", seen: [{ note: `caller used ${platformKey}` }] });
    const err = new Error(`upstream said: invalid key ${adminToken}`);
    child.error({ err, calls: [[`retry with ${platformKey}`]] }, "failed for %s", platformKey);
    requestLogger(logger, "req_1").warn(`token ${adminToken} refused`);
    const { lines, text } = await written();
    expect(text).not.toContain(platformKey);
    expect(text).not.toContain(adminToken);
    expect(lines[0]).toMatchObject({ msg: "failed for [redacted]", seen: [{ note: "caller used [redacted]" }], calls: [["retry with [redacted]"]] });
    const loggedErr = lines[0]?.err as { message: string; stack: string };
    expect(loggedErr.message).toBe("upstream said: invalid key [redacted]");
    expect(loggedErr.stack).toContain("upstream said: invalid key [redacted]");
    expect(lines[1]).toMatchObject({ requestId: "req_1", msg: "token [redacted] refused" });
  });

  it("when a told secret appears URL-encoded, JSON-escaped or inside base64 at any alignment, then none of those forms is written", async () => {
    const secret = 'sk-prov/ider+"key"=0123456789';
    const { logger, written } = capture([secret]);
    for (const prefix of ["", "a", "ab"]) {
      logger.info(
        { header: `Basic ${Buffer.from(`${prefix}user:${secret}`).toString("base64")}`, wrapped: Buffer.from(`${prefix}${secret}!`).toString("base64url") },
        "b64",
      );
    }
    logger.info({ url: `https://api.example/v1?x=${encodeURIComponent(secret)}` }, `raw ${secret}`);
    const { text } = await written();
    for (const form of secretForms(secret)) expect(text).not.toContain(form);
    expect(text).not.toContain(JSON.stringify(secret).slice(1, -1));
  });

  it("when a URL carries a password or a key-like query parameter, or a header value is a bearer token, then those parts are censored", async () => {
    const { logger, written } = capture();
    logger.warn({ url: "nats://gwuser:hunter2hunter2@nats.internal:4222", other: "redis://:p4ssw0rd-long@cache:6379/0" }, "reconnect");
    logger.warn("GET https://serpapi.com/search?q=cats&api_key=0123456789abcdef&engine=google failed");
    logger.warn("upstream wanted Authorization: Bearer sk-abcdefghijklmnop");
    const { text } = await written();
    for (const leaked of ["hunter2hunter2", "p4ssw0rd-long", "0123456789abcdef", "sk-abcdefghijklmnop"]) expect(text).not.toContain(leaked);
    expect(text).toContain("nats://[redacted]@nats.internal:4222");
    expect(text).toContain("q=cats&api_key=[redacted]&engine=google");
  });

  it("when a line holds nothing sensitive, then it is written byte for byte as pino made it", () => {
    const line = `${JSON.stringify({ level: 30, time: "t", service: "s", msg: "ingress listening", url: "http://127.0.0.1:8080", tokens: 5 })}\n`;
    expect(new Redactor(["a-told-secret-value"]).line(line)).toBe(line);
  });

  it("names that merely contain a credential word are left alone, those that end in one are sensitive", () => {
    expect(["authorization", "X-API-Key", "apiKey", "client_secret", "GATEWAY_ADMIN_TOKEN", "key", "Set-Cookie", "x-gw-identity"].every(isSensitiveName)).toBe(
      true,
    );
    expect(["input_tokens", "key_id", "keyPrefix", "api_key_env", "tokenizer", "monkey_business"].some(isSensitiveName)).toBe(false);
  });
});
