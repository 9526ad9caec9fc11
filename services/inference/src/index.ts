export { createInferenceService } from "./service";
export type { InferenceDeps, InferenceService, InferenceSettings } from "./service";
