export { createToolsService } from "./service";
export type { ToolsDeps, ToolsService, ToolsSettings } from "./service";
export { ResearchEnv, researchPolling } from "./config";
