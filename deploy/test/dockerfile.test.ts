import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { DockerfileParser, type Instruction } from "dockerfile-ast";
import { beforeAll, describe, expect, it } from "vitest";
import { deployDir, kustomize, repoDir } from "./kustomize";
import { mainContainer, Manifests } from "./manifests";

const services = { ingress: ["PORT", "ADMIN_PORT"], inference: ["INFERENCE_PORT"], tools: ["TOOLS_PORT"], jobs: ["JOBS_PORT"] } as const;

interface Stage {
  name: string;
  from: string;
  instructions: Instruction[];
}

const source = readFileSync(join(deployDir, "Dockerfile"), "utf8");
const dockerfile = DockerfileParser.parse(source);
const stages: Stage[] = [];
for (const instruction of dockerfile.getInstructions()) {
  const from = dockerfile.getFROMs().find((f) => f === instruction);
  if (from) stages.push({ name: from.getBuildStage() ?? String(stages.length), from: from.getImageName() ?? "", instructions: [] });
  else stages.at(-1)?.instructions.push(instruction);
}
const stage = (name: string) => {
  const found = stages.find((s) => s.name === name);
  if (!found) throw new Error(`no stage ${name}`);
  return found;
};
/** The stage and the stages it is built FROM, nearest first. */
const chain = (name: string): Stage[] => {
  const s = stage(name);
  return stages.some((o) => o.name === s.from) ? [s, ...chain(s.from)] : [s];
};
const keyword = (s: Stage, k: string) => s.instructions.filter((i) => i.getKeyword() === k);
/** An instruction's JSON array (exec form), or undefined for the shell form. */
const execForm = (text: string): string[] | undefined => {
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) && parsed.every((x) => typeof x === "string") ? parsed : undefined;
  } catch {
    return undefined;
  }
};
const envOf = (name: string): Record<string, string> =>
  Object.fromEntries(
    chain(name)
      .reverse()
      .flatMap((s) => dockerfile.getENVs().filter((e) => s.instructions.includes(e)))
      .flatMap((e) => e.getProperties().map((p) => [p.getName(), p.getValue() ?? ""])),
  );

describe("deploy/Dockerfile", () => {
  it("when the base image is named, then it is a Node LTS release pinned by full version and digest", () => {
    const base = dockerfile.getInitialARGs().find((a) => a.getProperty()?.getName() === "NODE_IMAGE")?.getProperty()?.getValue() ?? "";
    const m = /^node:(\d+)\.(\d+)\.(\d+)-[a-z]+(-slim)?@sha256:[0-9a-f]{64}$/.exec(base);
    expect(m, base).not.toBeNull();
    const major = Number(m?.[1]);
    expect(major % 2, "even majors are the LTS lines").toBe(0);
    expect(major).toBeGreaterThanOrEqual(20);
    // Every stage starts from that base or from an earlier stage: no other image slips in.
    for (const s of stages) expect(s.from === "${NODE_IMAGE}" || stages.some((o) => o.name === s.from), s.name).toBe(true);
  });

  it.each(Object.keys(services))("when the %s target is built, then it runs node as PID 1 in exec form, as a non-root user, with a health check", (name) => {
    const own = chain(name);
    expect(own.at(-1)?.from).toBe("${NODE_IMAGE}");
    const last = (k: string) => own.flatMap((s) => keyword(s, k)).at(0);
    const user = last("USER")?.getArgumentsContent() ?? "root";
    expect(user.split(":")[0]).not.toMatch(/^(0|root)$/);
    expect(user.split(":")[0]).toMatch(/^\d+$/); // numeric, so runAsNonRoot can verify it
    const entrypoint = execForm(last("ENTRYPOINT")?.getArgumentsContent() ?? "");
    const cmd = execForm(last("CMD")?.getArgumentsContent() ?? "");
    expect(entrypoint, "ENTRYPOINT in exec form").toEqual(["node", "--import", "tsx"]);
    expect(cmd, "CMD in exec form").toEqual([`/app/services/${name}/src/main.ts`]);
    expect(existsSync(join(repoDir, `services/${name}/src/main.ts`))).toBe(true);
    const healthcheck = keyword(stage(name), "HEALTHCHECK")[0]?.getArgumentsContent() ?? "";
    const probe = execForm(healthcheck.replace(/^CMD\s+/, ""));
    expect(probe, "HEALTHCHECK CMD in exec form").toEqual(["node", "/app/deploy/docker/healthcheck.mjs", services[name as keyof typeof services][0]]);
    expect(existsSync(join(deployDir, "docker/healthcheck.mjs"))).toBe(true);
  });

  it.each(Object.keys(services))("when the %s target is built, then only production dependencies reach it, installed from the lockfile", (name) => {
    const final = stage(name);
    const copies = dockerfile.getCOPYs().filter((c) => final.instructions.includes(c));
    const from = copies.map((c) => c.getFromFlag()?.getValue()).filter((f): f is string => f !== undefined);
    expect(from).toEqual([`${name}-deps`]);
    // Nothing is installed in the final stages themselves…
    for (const s of chain(name)) {
      for (const run of keyword(s, "RUN")) expect(run.getArgumentsContent()).not.toMatch(/\b(npm|pnpm|yarn)\s+(ci|i|install|add)\b/);
    }
    // …and the stage they copy from installs production dependencies only, frozen to the lockfile.
    const installs = chain(`${name}-deps`).flatMap((s) => keyword(s, "RUN")).map((r) => r.getArgumentsContent() ?? "");
    const install = installs.filter((r) => /\bpnpm install\b/.test(r));
    expect(install).toHaveLength(1);
    expect(install[0]).toMatch(/--prod\b/);
    expect(install[0]).toMatch(/--frozen-lockfile\b/);
    expect(install[0]).toContain(`--filter-prod "@gw/${name}..."`);
    expect(installs.filter((r) => /\b(npm (ci|install)|yarn)\b/.test(r))).toEqual([]);
    expect(installs.filter((r) => /\bpnpm fetch\b/.test(r)).every((r) => /--prod\b/.test(r))).toBe(true);
  });

  it("when the build context is sent, then an allow-list keeps local files, node_modules and tests out", () => {
    const ignore = readFileSync(join(deployDir, "Dockerfile.dockerignore"), "utf8").split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
    expect(ignore[0]).toBe("*");
    expect(ignore).toEqual(expect.arrayContaining(["**/node_modules", "**/*.test.ts"]));
    expect(ignore.filter((l) => l.startsWith("!")).some((l) => /\.env|\.data/.test(l))).toBe(false);
  });

  it("when pnpm runs in the build, then it is the version package.json pins", () => {
    const pkg = JSON.parse(readFileSync(join(repoDir, "package.json"), "utf8")) as { packageManager?: string };
    expect(pkg.packageManager).toMatch(/^pnpm@\d+\.\d+\.\d+/);
    expect(source).toMatch(/corepack enable pnpm/);
  });

  describe("and the Kubernetes manifests", () => {
    let m: Manifests;
    beforeAll(() => {
      m = new Manifests(kustomize(join(deployDir, "k8s", "overlays", "prod")));
    });

    it.each(Object.keys(services))("when %s runs in Kubernetes, then its container ports are the ones the image exposes and its port variables name", (name) => {
      const env = envOf(name);
      const exposed = stage(name).instructions.filter((i) => i.getKeyword() === "EXPOSE").flatMap((i) => (i.getArgumentsContent() ?? "").split(/\s+/)).map(Number);
      const vars = services[name as keyof typeof services];
      expect(exposed).toEqual(vars.map((v) => Number(env[v])));
      const c = mainContainer(m.deployment(`gw-${name}`));
      expect((c.ports ?? []).map((p) => p.containerPort)).toEqual(exposed);
      const migrate = m.deployment(`gw-${name}`).spec?.template.spec?.initContainers?.[0];
      if (migrate) expect(existsSync(join(repoDir, (migrate.args?.[0] ?? "").replace(/^\/app\//, "")))).toBe(true);
    });
  });
});
