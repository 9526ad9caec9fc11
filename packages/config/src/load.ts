import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import { GatewayConfig } from "./gateway-config";

/** A configuration problem; the message names the offending key. Entry points log it and exit 1. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** Formats zod issues as "path.to.key: problem" lines, so the operator sees which key is wrong. */
export function describeIssues(issues: readonly z.core.$ZodIssue[], root = ""): string {
  const at = (path: readonly PropertyKey[]) => [root, ...path.map(String)].filter(Boolean).join(".") || "(root)";
  return issues
    .flatMap((issue) =>
      issue.code === "unrecognized_keys" ? issue.keys.map((key) => `${at([...issue.path, key])}: unknown key`) : [`${at(issue.path)}: ${issue.message}`],
    )
    .join("; ");
}

export function parseWith<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ConfigError(`invalid ${what}: ${describeIssues(result.error.issues)}`);
  return result.data;
}

export function loadGatewayConfig(path: string): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(`GATEWAY_CONFIG: cannot read ${path}: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`GATEWAY_CONFIG: ${path} is not valid YAML: ${(err as Error).message}`);
  }
  return parseWith(GatewayConfig, raw ?? {}, `configuration file ${path}`);
}

/** Resolves each provider's credential from the environment variable it names. */
/** The provider keys set in `env`, as a list: what a service redacts from what it logs or keeps. */
export function providerSecretValues(config: GatewayConfig, env: Record<string, string | undefined>): string[] {
  return Object.values(resolveProviderSecrets(config, env)).filter((v): v is string => v !== undefined);
}

export function resolveProviderSecrets(config: GatewayConfig, env: Record<string, string | undefined>): Record<string, string | undefined> {
  const secrets: Record<string, string | undefined> = {};
  for (const [name, provider] of Object.entries(config.providers)) {
    secrets[name] = provider.api_key_env ? env[provider.api_key_env] || undefined : undefined;
  }
  return secrets;
}
