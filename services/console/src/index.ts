export { type ConsoleService, type ConsoleSettings, consoleMigrations, consoleWebDist, createConsoleService } from "./service";
export { OidcEnv, oidcSettings } from "./config";
