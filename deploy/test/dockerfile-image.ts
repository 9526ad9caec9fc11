import { cpSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { DockerfileParser, type Instruction } from "dockerfile-ast";
import { deployDir, repoDir } from "./kustomize";

/** deploy/Dockerfile, parsed into its stages, for the checks in dockerfile.test.ts and the built-output test. */
export interface Stage {
  name: string;
  from: string;
  instructions: Instruction[];
}

export const dockerfileSource = readFileSync(join(deployDir, "Dockerfile"), "utf8");
export const dockerfile = DockerfileParser.parse(dockerfileSource);
export const stages: Stage[] = [];
for (const instruction of dockerfile.getInstructions()) {
  const from = dockerfile.getFROMs().find((f) => f === instruction);
  if (from) stages.push({ name: from.getBuildStage() ?? String(stages.length), from: from.getImageName() ?? "", instructions: [] });
  else stages.at(-1)?.instructions.push(instruction);
}

export function stage(name: string): Stage {
  const found = stages.find((s) => s.name === name);
  if (!found) throw new Error(`no stage ${name}`);
  return found;
}

/** The stage and the stages it is built FROM, nearest first. */
export function chain(name: string): Stage[] {
  const s = stage(name);
  return stages.some((o) => o.name === s.from) ? [s, ...chain(s.from)] : [s];
}

export const keyword = (s: Stage, k: string): Instruction[] => s.instructions.filter((i) => i.getKeyword() === k);

/** An instruction's JSON array (exec form), or undefined for the shell form. */
export function execForm(text: string): string[] | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) && parsed.every((x) => typeof x === "string") ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** What a target runs: its ENTRYPOINT then its CMD (both exec form), the nearest of each. */
export function imageCommand(target: string): string[] {
  const last = (k: string) =>
    chain(target)
      .flatMap((s) => keyword(s, k))
      .at(0)
      ?.getArgumentsContent() ?? "";
  return [...(execForm(last("ENTRYPOINT")) ?? []), ...(execForm(last("CMD")) ?? [])];
}

export interface ImageCopy {
  /** The stage copied from; undefined for the build context. */
  from?: string;
  sources: string[];
  dest: string;
}

/** Every COPY that puts files into a target's filesystem, base stages first. */
export function imageCopies(target: string): ImageCopy[] {
  return chain(target)
    .reverse()
    .flatMap((s) => dockerfile.getCOPYs().filter((c) => s.instructions.includes(c)))
    .map((c) => {
      const args = c.getArguments().map((a) => a.getValue());
      return { from: c.getFromFlag()?.getValue() ?? undefined, sources: args.slice(0, -1), dest: args.at(-1) ?? "" };
    });
}

/**
 * Lays out in `into` the files a target's COPY lines put under /app, taken from this checkout (the
 * build stage's /src is the repository after `pnpm build`), so a test can run what the image holds
 * and nothing more. Only copies from the context or the build stage are supported.
 */
export function layOutImage(target: string, into: string, workdir = "/app", buildDir = "/src"): void {
  for (const copy of imageCopies(target)) {
    if (copy.from !== undefined && copy.from !== "build") throw new Error(`${target}: COPY --from=${copy.from} is not laid out`);
    const dest = join(into, copy.dest.startsWith("/") ? copy.dest.slice(workdir.length) : copy.dest);
    for (const source of copy.sources) {
      const path = join(repoDir, copy.from === "build" ? source.slice(buildDir.length) : source);
      // Docker's rules: a folder's contents go into dest; a file goes into dest/ or becomes dest.
      const to = statSync(path).isDirectory() || !copy.dest.endsWith("/") ? dest : join(dest, basename(path));
      mkdirSync(statSync(path).isDirectory() ? to : dirname(to), { recursive: true });
      cpSync(path, to, { recursive: true });
    }
  }
}
