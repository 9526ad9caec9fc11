export { createToolsService } from "./service";
export type { ToolsDeps, ToolsService, ToolsSettings } from "./service";
