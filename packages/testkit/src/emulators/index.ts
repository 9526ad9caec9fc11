export { startOpenAIUpstream, openAIError } from "./openai-upstream";
export type { OpenAIUpstreamOptions } from "./openai-upstream";
export { startAnthropicUpstream, anthropicErrorType, ANTHROPIC_VERSIONS } from "./anthropic-upstream";
export type { AnthropicUpstreamOptions } from "./anthropic-upstream";
export type { EmulatorOptions, RecordedRequest, ScriptStep, UpstreamEmulator } from "./http-emulator";
// Building blocks for further fake upstreams (Tavily, rerank…): same control surface for free.
export { Exchange, startEmulator } from "./http-emulator";
export type { ProviderSpec } from "./http-emulator";
