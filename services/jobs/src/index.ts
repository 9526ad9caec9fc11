export { createJobsService, jobsMigrations } from "./service";
export type { JobsDeps, JobsService, JobsSettings } from "./service";
export { JobTimingEnv, jobTimings } from "./config";
