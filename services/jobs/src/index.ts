export { createJobsService, jobsMigrations } from "./service";
export type { JobsDeps, JobsService, JobsSettings } from "./service";
export { JobTimingEnv, jobTimings } from "./config";
export { GroupCommit } from "./group-commit";
export type { GroupCommitOptions } from "./group-commit";
