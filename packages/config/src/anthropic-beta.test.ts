import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, loadGatewayConfig } from "./load";

const dir = mkdtempSync(join(tmpdir(), "gw-config-beta-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileCount = 0;
function load(providers: string) {
  const path = join(dir, `config-${++fileCount}.yaml`);
  writeFileSync(
    path,
    `providers:
${providers}
plans:
  plus:       { requests_per_minute: 60,   tokens_per_minute: 100000 }
  pro:        { requests_per_minute: 600,  tokens_per_minute: 1000000 }
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10000000 }
`,
  );
  return loadGatewayConfig(path);
}

function loadError(providers: string): ConfigError {
  try {
    load(providers);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("expected a ConfigError, but the file loaded");
}

describe("loadGatewayConfig: anthropic_beta", () => {
  it("when an anthropic provider lists betas, then they are kept; without the key, none are allowed", () => {
    const config =
      load(`  ant:  { kind: anthropic, base_url: https://api.anthropic.com, anthropic_beta: [context-1m-2025-08-07, token-efficient-tools-2025-02-19] }
  ant2: { kind: anthropic, base_url: https://api.anthropic.com }`);
    expect(config.providers.ant?.anthropic_beta).toEqual(["context-1m-2025-08-07", "token-efficient-tools-2025-02-19"]);
    expect(config.providers.ant2?.anthropic_beta ?? []).toEqual([]);
  });

  it("when a provider of another kind has anthropic_beta, then loading fails naming providers.<name>.anthropic_beta", () => {
    const err = loadError("  oa: { kind: openai, base_url: https://api.openai.com/v1, anthropic_beta: [context-1m-2025-08-07] }");
    expect(err.message).toContain("providers.oa.anthropic_beta");
    expect(err.message).toContain("kind anthropic");
    expect(loadError("  oa: { kind: openai, base_url: https://api.openai.com/v1, anthropic_beta: [] }").message).toContain("providers.oa.anthropic_beta");
  });

  it("when a beta is not a bare name (a comma list, spaces, empty), then loading fails naming its index", () => {
    for (const bad of ['"a,b"', '"a b"', '""']) {
      const err = loadError(`  ant: { kind: anthropic, base_url: https://api.anthropic.com, anthropic_beta: [ok-2025-01-01, ${bad}] }`);
      expect(err.message, bad).toContain("providers.ant.anthropic_beta.1");
    }
  });
});
