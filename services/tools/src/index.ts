export { createToolsService } from "./service";
export type { ToolsDeps, ToolsService, ToolsSettings } from "./service";
// The web-tool client, research included, for the research job worker (issue 6).
export { createWebtoolClient } from "./webtool/client";
export type { WebtoolCallOptions, WebtoolClient } from "./webtool/client";
export { getResearch, startResearch } from "./webtool/research";
export type { WebtoolResearchDeps } from "./webtool/research";
export { createSerptoolClient } from "./serptool/client";
export type { SerptoolClient } from "./serptool/client";
export { resolveToolUpstream, toolProviderKinds } from "./tool-upstream";
export type { ToolUpstream } from "./tool-upstream";
export { createUpstreamAgent } from "./upstream/http";
export type { ToolOutcome } from "./upstream/call";
export { defaultRetryPolicy } from "./upstream/retry";
export type { RetryPolicy } from "./upstream/retry";
