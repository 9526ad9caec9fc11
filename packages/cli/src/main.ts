import { z } from "zod";
import { resolveAdminToken } from "./admin-token";
import { runCli } from "./run";

/** `pnpm gw`: the admin CLI. Its environment is parsed here and nowhere else. */
const CliEnv = z.object({
  GATEWAY_ADMIN_URL: z.string().optional(),
  ADMIN_PORT: z.string().regex(/^\d+$/).optional(),
  GATEWAY_ADMIN_TOKEN: z.string().optional(),
  GATEWAY_DATA_DIR: z.string().optional(),
});
const env = CliEnv.parse(process.env);
const token = resolveAdminToken(env);
const code = await runCli(process.argv.slice(2), {
  adminUrl: env.GATEWAY_ADMIN_URL ?? `http://127.0.0.1:${env.ADMIN_PORT ?? "8090"}`,
  adminToken: token.token,
  adminTokenFile: "path" in token ? token.path : undefined,
  adminTokenProblem: "problem" in token ? token.problem : undefined,
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
});
process.exit(code);
