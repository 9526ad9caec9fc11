export { assertOpenAI, createSpecValidator, validateOpenAI } from "./validate";
export type { SpecValidator, ValidationResult } from "./validate";
export { referenceFilePath } from "./spec-files";
