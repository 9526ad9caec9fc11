import { z } from "zod";
import { runCli } from "./run";

/** `pnpm gw`: the admin CLI. Its environment is parsed here and nowhere else. */
const CliEnv = z.object({
  GATEWAY_ADMIN_URL: z.string().optional(),
  ADMIN_PORT: z.string().regex(/^\d+$/).optional(),
  GATEWAY_ADMIN_TOKEN: z.string().optional(),
});
const env = CliEnv.parse(process.env);
const code = await runCli(process.argv.slice(2), {
  adminUrl: env.GATEWAY_ADMIN_URL ?? `http://127.0.0.1:${env.ADMIN_PORT ?? "8090"}`,
  adminToken: env.GATEWAY_ADMIN_TOKEN,
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
});
process.exit(code);
