export { type ConsoleService, type ConsoleSettings, consoleMigrations, consoleWebDist, createConsoleService } from "./service";
export { ConsoleSharedEnv, oidcSettings, smtpSettings } from "./config";
