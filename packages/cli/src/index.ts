export { runCli } from "./run";
export { parseCommand, UsageError } from "./commands";
