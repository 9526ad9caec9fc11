import { spawn } from "node:child_process";
import { parseArgs } from "node:util";

/**
 * `pnpm fuzz [--count N] [--seed N] [--path P] [--class C] [--mode mesh|embedded] [--survey]
 * [--flood-requests N] [--flood-bodies N]`: runs only the fuzz files, passing the run's size and
 * seed to them through the FUZZ_* variables that test/fuzz/settings.ts reads. Without options it is
 * the CI run. A failure prints the seed, path and class that replay it.
 */
const { values } = parseArgs({
  options: {
    count: { type: "string" },
    seed: { type: "string" },
    path: { type: "string" },
    class: { type: "string" },
    mode: { type: "string" },
    survey: { type: "boolean" },
    verbose: { type: "boolean" },
    "flood-requests": { type: "string" },
    "flood-bodies": { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});

if (values.help) {
  console.log(
    "pnpm fuzz [--count N] [--seed N] [--path P] [--class C|flood|operator] [--mode mesh|embedded] [--survey] [--verbose] [--flood-requests N] [--flood-bodies N]",
  );
  process.exit(0);
}
if (values.mode !== undefined && values.mode !== "mesh" && values.mode !== "embedded") {
  console.error(`--mode must be mesh or embedded, not ${values.mode}`);
  process.exit(2);
}
for (const name of ["count", "seed", "flood-requests", "flood-bodies"] as const) {
  const value = values[name];
  if (value !== undefined && !/^-?\d+$/.test(value)) {
    console.error(`--${name} must be an integer, not ${value}`);
    process.exit(2);
  }
}

const env: Record<string, string | undefined> = {
  ...process.env,
  FUZZ_COUNT: values.count,
  FUZZ_SEED: values.seed,
  FUZZ_PATH: values.path,
  FUZZ_CLASS: values.class,
  FUZZ_MODE: values.mode,
  FUZZ_SURVEY: values.survey ? "1" : undefined,
  FUZZ_VERBOSE: values.verbose ? "1" : undefined,
  FUZZ_FLOOD_REQUESTS: values["flood-requests"],
  FUZZ_FLOOD_BODIES: values["flood-bodies"],
};
const child = spawn("pnpm", ["exec", "vitest", "run", "test/fuzz/"], { stdio: "inherit", env });
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
