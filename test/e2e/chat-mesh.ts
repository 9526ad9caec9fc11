import { startAnthropicUpstream, startOpenAIUpstream, type UpstreamEmulator } from "@gw/testkit";
import { adminClient, startTestMesh, type RunningMesh } from "./harness";

/**
 * The mesh in front of one OpenAI-kind and one Anthropic-kind upstream, serving `gpt-e2e` and
 * `claude-e2e` (plus any `extraModels` YAML lines), and a key of a pro workspace allowed both.
 */
export interface ChatMesh {
  openaiUp: UpstreamEmulator;
  anthropicUp: UpstreamEmulator;
  gw: RunningMesh;
  key: string;
  stop(): Promise<void>;
}

export async function startChatMesh(options: { workspace: string; openaiKey: string; anthropicKey: string; extraModels?: string[] }): Promise<ChatMesh> {
  const openaiUp = await startOpenAIUpstream({ apiKey: options.openaiKey });
  const anthropicUp = await startAnthropicUpstream({ apiKey: options.anthropicKey });
  let gw: RunningMesh | undefined;
  const stop = async () => {
    await gw?.stop();
    await openaiUp.close();
    await anthropicUp.close();
  };
  try {
    gw = await startTestMesh(
      `
providers:
  oa:  { kind: openai,    base_url: "${openaiUp.url}", api_key_env: E2E_OPENAI_KEY }
  ant: { kind: anthropic, base_url: "${anthropicUp.url}", api_key_env: E2E_ANTHROPIC_KEY, anthropic_beta: [token-efficient-tools-2025-02-19, context-1m-2025-08-07] }
models:
  claude-e2e: { type: chat, routes: [{ provider: ant, model: claude-sonnet-4-5 }] }
  gpt-e2e:    { type: chat, routes: [{ provider: oa, model: gpt-4o-mini }] }
${(options.extraModels ?? []).map((line) => `  ${line}\n`).join("")}plans:
  plus:       { requests_per_minute: 60,   tokens_per_minute: 100000 }
  pro:        { requests_per_minute: 600,  tokens_per_minute: 1000000 }
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10000000 }
`,
      { E2E_OPENAI_KEY: options.openaiKey, E2E_ANTHROPIC_KEY: options.anthropicKey },
    );
    const admin = adminClient(gw.adminURL, gw.adminToken);
    const ws = await admin<{ id: string }>("POST", "/admin/workspaces", { name: options.workspace, plan: "pro", models: ["claude-e2e", "gpt-e2e"] });
    const key = (await admin<{ key: string }>("POST", `/admin/workspaces/${ws.id}/keys`, {})).key;
    return { openaiUp, anthropicUp, gw, key, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
