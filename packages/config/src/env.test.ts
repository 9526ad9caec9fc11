import { describe, expect, it } from "vitest";
import { z } from "zod";
import { logLevel, optionalUrl, parseEnv, port, secret } from "./env";
import { ConfigError } from "./load";

const ServiceEnv = z.object({
  PORT: port(8080),
  ADMIN_PORT: port(8090),
  LOG_LEVEL: logLevel,
  GATEWAY_INTERNAL_SECRET: secret,
  DATABASE_URL: optionalUrl(/^postgres(ql)?$/),
});

const goodSecret = "0123456789abcdef0123";

function envError(env: Record<string, string | undefined>): ConfigError {
  try {
    parseEnv(ServiceEnv, env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("parseEnv", () => {
  it("when only required variables are set, then defaults fill the rest and ports are numbers", () => {
    expect(parseEnv(ServiceEnv, { GATEWAY_INTERNAL_SECRET: goodSecret })).toEqual({
      PORT: 8080,
      ADMIN_PORT: 8090,
      LOG_LEVEL: "info",
      GATEWAY_INTERNAL_SECRET: goodSecret,
      DATABASE_URL: undefined,
    });
    expect(parseEnv(ServiceEnv, { GATEWAY_INTERNAL_SECRET: goodSecret, PORT: "0", DATABASE_URL: "" }).PORT).toBe(0);
  });

  it("when PORT is not a number, then the ConfigError names PORT", () => {
    const err = envError({ PORT: "abc", GATEWAY_INTERNAL_SECRET: goodSecret });
    expect(err.message).toMatch(/\bPORT\b/);
    expect(err.message).not.toContain("ADMIN_PORT");
    expect(err.message).toContain("environment");
  });

  it("when a port is out of range, then the ConfigError names that key", () => {
    expect(envError({ ADMIN_PORT: "70000", GATEWAY_INTERNAL_SECRET: goodSecret }).message).toContain("ADMIN_PORT");
  });

  it("when the secret is too short or missing, then the ConfigError names GATEWAY_INTERNAL_SECRET", () => {
    expect(envError({ GATEWAY_INTERNAL_SECRET: "short" }).message).toContain("GATEWAY_INTERNAL_SECRET");
    expect(envError({}).message).toContain("GATEWAY_INTERNAL_SECRET");
  });

  it("when the secret is too short, then its value does not appear in the message", () => {
    expect(envError({ GATEWAY_INTERNAL_SECRET: "s3cr3tValue" }).message).not.toContain("s3cr3tValue");
  });

  it("when LOG_LEVEL is not a pino level, then the ConfigError names LOG_LEVEL", () => {
    expect(envError({ LOG_LEVEL: "loud", GATEWAY_INTERNAL_SECRET: goodSecret }).message).toContain("LOG_LEVEL");
  });

  it("when a URL has the wrong protocol, then the ConfigError names it", () => {
    const err = envError({ DATABASE_URL: "mysql://db/x", GATEWAY_INTERNAL_SECRET: goodSecret });
    expect(err.message).toContain("DATABASE_URL");
  });

  it("when several keys are bad, then every one is named", () => {
    const err = envError({ PORT: "x", LOG_LEVEL: "loud" });
    for (const key of ["PORT", "LOG_LEVEL", "GATEWAY_INTERNAL_SECRET"]) expect(err.message).toContain(key);
  });
});
