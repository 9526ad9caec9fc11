import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { defaultConfigPath, repoRoot } from "./env";
import { ConfigError, loadGatewayConfig, resolveProviderSecrets } from "./load";

const dir = mkdtempSync(join(tmpdir(), "gw-config-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileCount = 0;
function writeConfig(text: string): string {
  const path = join(dir, `config-${++fileCount}.yaml`);
  writeFileSync(path, text);
  return path;
}

const plans = `plans:
  plus:       { requests_per_minute: 60,   tokens_per_minute: 100000 }
  pro:        { requests_per_minute: 600,  tokens_per_minute: 1000000 }
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10000000 }
`;

const minimal = `providers:
  openai: { kind: openai, base_url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY }
models:
  gpt-4o-mini: { type: chat, routes: [{ provider: openai, model: gpt-4o-mini }] }
${plans}`;

/** The ConfigError thrown by loading `text` (fails the test if loading succeeds). */
function loadError(text: string): ConfigError {
  const path = writeConfig(text);
  try {
    loadGatewayConfig(path);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("expected a ConfigError, but the file loaded");
}

describe("loadGatewayConfig: valid files", () => {
  it("when the repository's gateway.config.yaml is loaded, then it parses with its providers, models and plans", () => {
    const path = join(repoRoot(), "gateway.config.yaml");
    expect(defaultConfigPath()).toBe(path);
    const config = loadGatewayConfig(path);
    expect(Object.keys(config.providers)).toEqual(expect.arrayContaining(["openai", "anthropic", "webtool", "serptool"]));
    expect(config.providers.webtool?.kind).toBe("tavily");
    expect(config.providers.serptool?.kind).toBe("serpapi");
    expect(config.models["claude-sonnet"]?.routes.map((r) => r.provider)).toEqual(["anthropic", "openai"]);
    expect(config.plans.pro.requests_per_minute).toBeGreaterThan(config.plans.plus.requests_per_minute);
  });

  it("when a provider omits timeout_ms, then the default applies", () => {
    const config = loadGatewayConfig(writeConfig(minimal));
    expect(config.providers.openai?.timeout_ms).toBe(60_000);
    expect(config.models["gpt-4o-mini"]?.type).toBe("chat");
  });

  it("when providers and models are absent, then they default to empty", () => {
    const config = loadGatewayConfig(writeConfig(plans));
    expect(config.providers).toEqual({});
    expect(config.models).toEqual({});
  });
});

describe("loadGatewayConfig: unknown keys name their full path", () => {
  it("when a provider has an unknown key, then the message names providers.openai.bogus", () => {
    const err = loadError(minimal.replace("api_key_env: OPENAI_API_KEY }", "api_key_env: OPENAI_API_KEY, bogus: 1 }"));
    expect(err.message).toContain("providers.openai.bogus");
  });

  it("when the top level has an unknown key, then the message names it", () => {
    const err = loadError(`${minimal}extra_section: {}\n`);
    expect(err.message).toContain("extra_section");
  });

  it("when a model route has an unknown key, then the message names models.<name>.routes.0.<key>", () => {
    const err = loadError(minimal.replace("model: gpt-4o-mini }", "model: gpt-4o-mini, weight: 2 }"));
    expect(err.message).toContain("models.gpt-4o-mini.routes.0.weight");
  });

  it("when a plan has an unknown key, then the message names plans.pro.<key>", () => {
    const err = loadError(minimal.replace("pro:        { requests_per_minute: 600,", "pro:        { requests_per_minute: 600, burst: 5,"));
    expect(err.message).toContain("plans.pro.burst");
  });
});

describe("loadGatewayConfig: bad values", () => {
  it("when a model route names an unknown provider, then the message names models.<name>.routes.<i>.provider", () => {
    const text = minimal.replace(
      "routes: [{ provider: openai, model: gpt-4o-mini }]",
      "routes: [{ provider: openai, model: gpt-4o-mini }, { provider: nowhere, model: x }]",
    );
    const err = loadError(text);
    expect(err.message).toContain("models.gpt-4o-mini.routes.1.provider");
    expect(err.message).toContain("nowhere");
    expect(err.message).not.toContain("routes.0.provider");
  });

  it("when the first route names an unknown provider, then the message names routes.0.provider", () => {
    const err = loadError(minimal.replace("provider: openai, model", "provider: openia, model"));
    expect(err.message).toContain("models.gpt-4o-mini.routes.0.provider");
  });

  it("when a provider kind is not known, then the message names providers.<name>.kind", () => {
    const err = loadError(minimal.replace("kind: openai", "kind: gopher"));
    expect(err.message).toContain("providers.openai.kind");
  });

  it("when a model type is not known, then the message names models.<name>.type", () => {
    const err = loadError(minimal.replace("type: chat", "type: video"));
    expect(err.message).toContain("models.gpt-4o-mini.type");
  });

  it("when a base_url is not http(s), then the message names it", () => {
    const err = loadError(minimal.replace("https://api.openai.com/v1", "ftp://example.com"));
    expect(err.message).toContain("providers.openai.base_url");
  });

  it("when a model has no routes, then the message names models.<name>.routes", () => {
    const err = loadError(minimal.replace("routes: [{ provider: openai, model: gpt-4o-mini }]", "routes: []"));
    expect(err.message).toContain("models.gpt-4o-mini.routes");
  });

  it("when a plan is missing, then the message names it", () => {
    const err = loadError(minimal.replace(/ {2}enterprise:.*\n/, ""));
    expect(err.message).toContain("plans.enterprise");
  });

  it("when a plan limit is not a positive integer, then the message names it", () => {
    const err = loadError(minimal.replace("requests_per_minute: 60,", "requests_per_minute: -1,"));
    expect(err.message).toContain("plans.plus.requests_per_minute");
  });

  it("when api_key_env is not an environment variable name, then the message names it", () => {
    const err = loadError(minimal.replace("api_key_env: OPENAI_API_KEY", "api_key_env: sk-live-123"));
    expect(err.message).toContain("providers.openai.api_key_env");
  });

  it("when the file is not valid YAML, then it is a ConfigError saying so", () => {
    const err = loadError("providers: {\n  openai: [unclosed\n");
    expect(err.message).toMatch(/not valid YAML/);
    expect(err.message).toContain("GATEWAY_CONFIG");
  });

  it("when the file does not exist, then it is a ConfigError naming GATEWAY_CONFIG and the path", () => {
    const missing = join(dir, "does-not-exist.yaml");
    expect(() => loadGatewayConfig(missing)).toThrow(ConfigError);
    expect(() => loadGatewayConfig(missing)).toThrow(/GATEWAY_CONFIG.*does-not-exist\.yaml/);
  });

  it("when the file is empty, then the error names the missing plans", () => {
    const err = loadError("");
    expect(err.message).toContain("plans");
  });
});

describe("resolveProviderSecrets", () => {
  it("when a provider's variable is set, then its secret is returned; unset or empty give undefined", () => {
    const config = loadGatewayConfig(
      writeConfig(`providers:
  openai:  { kind: openai, base_url: https://a.example, api_key_env: OPENAI_API_KEY }
  cohere:  { kind: cohere, base_url: https://b.example, api_key_env: COHERE_API_KEY }
  mistral: { kind: mistral, base_url: https://c.example, api_key_env: MISTRAL_API_KEY }
  local:   { kind: openai, base_url: http://localhost:11434/v1 }
${plans}`),
    );
    const secrets = resolveProviderSecrets(config, { OPENAI_API_KEY: "sk-1", COHERE_API_KEY: "", UNRELATED: "x" });
    expect(secrets).toEqual({ openai: "sk-1", cohere: undefined, mistral: undefined, local: undefined });
  });
});
