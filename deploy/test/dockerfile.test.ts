import { existsSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { serviceEntries, shipped } from "../../scripts/build";
import { serviceNodeFlags } from "../../services/embedded/src/mesh-processes";
import { consoleMigrations, consoleWebDist } from "../../services/console/src/service";
import { chain, dockerfile, dockerfileSource as source, execForm, imageCommand, imageCopies, keyword, stage, stages } from "./dockerfile-image";
import { deployDir, kustomize, repoDir } from "./kustomize";
import { mainContainer, Manifests } from "./manifests";

const services = {
  ingress: ["PORT", "ADMIN_PORT"],
  inference: ["INFERENCE_PORT"],
  tools: ["TOOLS_PORT"],
  jobs: ["JOBS_PORT"],
  usage: ["USAGE_PORT"],
  console: ["CONSOLE_PORT"],
} as const;
type Service = keyof typeof services;
/** What an image holds from the build stage besides its bundle, migrations and package.json: the console's web app (Vite's build). */
const alsoBuilt: Partial<Record<Service, string[]>> = { console: ["/src/services/console/web/dist"] };
/** The build stage's command that makes the console's web app (services/console/web/dist). */
const WEB_BUILD = "pnpm --filter @gw/console-web build";

const envOf = (name: string): Record<string, string> =>
  Object.fromEntries(
    chain(name)
      .reverse()
      .flatMap((s) => dockerfile.getENVs().filter((e) => s.instructions.includes(e)))
      .flatMap((e) => e.getProperties().map((p) => [p.getName(), p.getValue() ?? ""])),
  );

/** `/app/services/<name>/dist/<entry>.js` for an entry point `pnpm build` makes (scripts/build.ts), from a source that exists. */
const expectBuiltEntry = (path: string, name: Service, entry: string) => {
  expect(path).toBe(`/app/services/${name}/dist/${entry}.js`);
  expect(serviceEntries[name] as readonly string[]).toContain(entry);
  expect(existsSync(join(repoDir, `services/${name}/src/${entry}.ts`))).toBe(true);
};

describe("deploy/Dockerfile", () => {
  it("when the base image is named, then it is a Node LTS release pinned by full version and digest", () => {
    const base =
      dockerfile
        .getInitialARGs()
        .find((a) => a.getProperty()?.getName() === "NODE_IMAGE")
        ?.getProperty()
        ?.getValue() ?? "";
    const m = /^node:(\d+)\.(\d+)\.(\d+)-[a-z]+(-slim)?@sha256:[0-9a-f]{64}$/.exec(base);
    expect(m, base).not.toBeNull();
    const major = Number(m?.[1]);
    expect(major % 2, "even majors are the LTS lines").toBe(0);
    expect(major).toBeGreaterThanOrEqual(20);
    // Every stage starts from that base or from an earlier stage: no other image slips in.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's ARG, as dockerfile-ast reports it.
    for (const s of stages) expect(s.from === "${NODE_IMAGE}" || stages.some((o) => o.name === s.from), s.name).toBe(true);
  });

  it.each(Object.keys(services))(
    "when the %s target is built, then it runs its bundle with node as PID 1 in exec form, source maps on, as a non-root user, with a health check",
    (name) => {
      const own = chain(name);
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's ARG, as dockerfile-ast reports it.
      expect(own.at(-1)?.from).toBe("${NODE_IMAGE}");
      const last = (k: string) => own.flatMap((s) => keyword(s, k)).at(0);
      const user = last("USER")?.getArgumentsContent() ?? "root";
      expect(user.split(":")[0]).not.toMatch(/^(0|root)$/);
      expect(user.split(":")[0]).toMatch(/^\d+$/); // numeric, so runAsNonRoot can verify it
      expect(execForm(last("ENTRYPOINT")?.getArgumentsContent() ?? ""), "ENTRYPOINT in exec form").toEqual(["node", "--enable-source-maps"]);
      // The service's own Node options (the mesh starts it with the same), then its bundle.
      const nodeFlags = serviceNodeFlags[name as Service] ?? [];
      expect(execForm(last("CMD")?.getArgumentsContent() ?? ""), "CMD in exec form").toHaveLength(nodeFlags.length + 1);
      const [node, flag, ...rest] = imageCommand(name);
      expect([node, flag, rest.slice(0, nodeFlags.length)]).toEqual(["node", "--enable-source-maps", nodeFlags]);
      const [entry, ...after] = rest.slice(nodeFlags.length);
      expect(after).toEqual([]);
      expectBuiltEntry(entry ?? "", name as Service, "main");
      // The migration entry the comment offers for an init container is built too.
      const migrate = /CMD \["(\/app\/services\/[a-z]+\/dist\/migrate\.js)"\]/.exec(
        source.slice(source.indexOf(`AS ${name}\n`)).split("\nFROM ")[0] ?? "",
      )?.[1];
      if (migrate) expectBuiltEntry(migrate, name as Service, "migrate");
      const healthcheck = keyword(stage(name), "HEALTHCHECK")[0]?.getArgumentsContent() ?? "";
      const probe = execForm(healthcheck.replace(/^CMD\s+/, ""));
      expect(probe, "HEALTHCHECK CMD in exec form").toEqual(["node", "/app/deploy/docker/healthcheck.mjs", services[name as Service][0]]);
      expect(existsSync(join(deployDir, "docker/healthcheck.mjs"))).toBe(true);
    },
  );

  it.each(Object.keys(services))(
    "when the %s target is built, then only its bundle, migrations and package.json reach it from the build stage: no tsx, TypeScript or node_modules",
    (name) => {
      const copies = imageCopies(name);
      // The service's own files come from the build stage, which ran `pnpm build`…
      const built = copies.filter((c) => c.from === "build").flatMap((c) => c.sources);
      const extra = alsoBuilt[name as Service] ?? [];
      expect(built).toEqual(
        expect.arrayContaining([
          `/src/services/${name}/package.json`,
          `/src/services/${name}/dist`,
          ...(existsSync(join(repoDir, `services/${name}/migrations`)) ? [`/src/services/${name}/migrations`] : []),
          ...extra,
        ]),
      );
      const allowed = new Set([
        "/src/pnpm-workspace.yaml",
        "/src/gateway.config.yaml",
        `/src/services/${name}/package.json`,
        `/src/services/${name}/dist`,
        `/src/services/${name}/migrations`,
        ...extra,
      ]);
      expect(
        built.filter((path) => !allowed.has(path)),
        "nothing else from the build stage",
      ).toEqual([]);
      // …from the context, only the health check script; no other stage is copied from.
      expect(copies.filter((c) => c.from === undefined).flatMap((c) => c.sources)).toEqual(["deploy/docker/healthcheck.mjs"]);
      expect(copies.every((c) => c.from === undefined || c.from === "build")).toBe(true);
      for (const path of copies.flatMap((c) => [...c.sources, c.dest]))
        expect(path).not.toMatch(/node_modules|\/src\/(services|packages)\/[^/]+\/src\b|\.ts$|tsx/);
      // Nothing is installed in the runtime stages; the command runs plain node.
      for (const s of chain(name)) {
        for (const run of keyword(s, "RUN")) expect(run.getArgumentsContent()).not.toMatch(/\b(npm|pnpm|yarn)\s+(ci|i|install|add|fetch|build)\b/);
      }
      expect(imageCommand(name).join(" ")).not.toMatch(/tsx|\.ts\b|--import|--loader/);
    },
  );

  it("when the console target is built, then its migrations and web app sit where the bundle looks for them, and its password add-on in its dist/", () => {
    // The bundle at /app/services/console/dist/ resolves them as the sources do from src/ (two levels up, then console/…).
    const dest = (source: string) =>
      imageCopies("console")
        .find((c) => c.from === "build" && c.sources.includes(source))
        ?.dest.replace(/\/$/, "");
    expect(dest("/src/services/console/web/dist")).toBe(`/app/${relative(repoDir, consoleWebDist)}`);
    expect(dest("/src/services/console/migrations")).toBe(`/app/${relative(repoDir, consoleMigrations)}`);
    expect(dest("/src/services/console/dist")).toBe("/app/services/console/dist");
    // The native add-on (scripts/build.ts copies it, with this platform's binary, into dist/node_modules/)
    // comes with dist/, so the build stage must run on the image's platform: no --platform on its FROMs.
    expect(shipped).toContain("@node-rs/argon2");
    for (const s of chain("build")) {
      const from = dockerfile.getFROMs().find((f) => f.getBuildStage() === s.name);
      expect(from?.getPlatformFlag(), `FROM … AS ${s.name}`).toBeNull();
    }
    const web = JSON.parse(readFileSync(join(repoDir, "services/console/web/package.json"), "utf8")) as { name?: string; scripts?: Record<string, string> };
    expect(`pnpm --filter ${web.name} build`).toBe(WEB_BUILD);
    expect(web.scripts?.build).toMatch(/^vite build\b/);
  });

  it("when pnpm build makes a service, then the Dockerfile has an image target for it (embedded, the one-process launcher, ships none)", () => {
    expect(
      Object.keys(serviceEntries)
        .filter((name) => name !== "embedded")
        .sort(),
    ).toEqual(Object.keys(services).sort());
    for (const name of Object.keys(services))
      expect(
        stages.some((s) => s.name === name),
        name,
      ).toBe(true);
  });

  it("when the build stage runs, then it installs the workspace frozen to the lockfile, builds the console's web app and runs pnpm build", () => {
    const runs = chain("build")
      .flatMap((s) => keyword(s, "RUN"))
      .map((r) => r.getArgumentsContent() ?? "");
    const install = runs.filter((r) => /\bpnpm install\b/.test(r));
    expect(install).toHaveLength(1);
    expect(install[0]).toMatch(/--frozen-lockfile\b/);
    expect(install[0]).toMatch(/--offline\b/);
    expect(install[0]).toMatch(/&& pnpm build\s*$/);
    // …after the console's web app, which its image copies from services/console/web/dist.
    const steps = (install[0] ?? "")
      .replace(/\\\n/g, " ")
      .split("&&")
      .map((step) => step.trim().replace(/\s+/g, " "));
    expect(steps.slice(-2)).toEqual([WEB_BUILD, "pnpm build"]);
    expect(runs.filter((r) => /\b(npm (ci|install)|yarn)\b/.test(r))).toEqual([]);
    const pkg = JSON.parse(readFileSync(join(repoDir, "package.json"), "utf8")) as { scripts?: Record<string, string> };
    expect(pkg.scripts?.build).toBe("tsx scripts/build.ts");
    // The build's inputs are in the context: the build script and everything it bundles.
    const contextCopies = chain("build").flatMap((s) => dockerfile.getCOPYs().filter((c) => s.instructions.includes(c) && !c.getFromFlag()));
    const sources = contextCopies.flatMap((c) =>
      c
        .getArguments()
        .slice(0, -1)
        .map((a) => a.getValue()),
    );
    expect(sources).toEqual(expect.arrayContaining(["scripts", "packages", "services", "package.json", "pnpm-lock.yaml"]));
  });

  it("when the build context is sent, then an allow-list keeps local files, node_modules, old bundles and tests out, and lets in what the build copies", () => {
    const ignore = readFileSync(join(deployDir, "Dockerfile.dockerignore"), "utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#"));
    expect(ignore[0]).toBe("*");
    expect(ignore).toEqual(expect.arrayContaining(["**/node_modules", "**/dist", "**/*.test.ts"]));
    const allowed = ignore.filter((l) => l.startsWith("!")).map((l) => l.slice(1).replace(/\/$/, ""));
    expect(allowed.some((l) => /\.env|\.data/.test(l))).toBe(false);
    const fromContext = stages.flatMap((s) => dockerfile.getCOPYs().filter((c) => s.instructions.includes(c) && !c.getFromFlag()));
    for (const path of fromContext.flatMap((c) =>
      c
        .getArguments()
        .slice(0, -1)
        .map((a) => a.getValue().replace(/\/$/, "")),
    )) {
      expect(
        allowed.some((a) => path === a || path.startsWith(`${a}/`)),
        path,
      ).toBe(true);
    }
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

    it.each(Object.keys(services))(
      "when %s runs in Kubernetes, then its container ports are the ones the image exposes and its port variables name",
      (name) => {
        const env = envOf(name);
        const exposed = stage(name)
          .instructions.filter((i) => i.getKeyword() === "EXPOSE")
          .flatMap((i) => (i.getArgumentsContent() ?? "").split(/\s+/))
          .map(Number);
        const vars = services[name as keyof typeof services];
        expect(exposed).toEqual(vars.map((v) => Number(env[v])));
        const c = mainContainer(m.deployment(`gw-${name}`));
        expect((c.ports ?? []).map((p) => p.containerPort)).toEqual(exposed);
        const migrate = m.deployment(`gw-${name}`).spec?.template.spec?.initContainers?.[0];
        if (migrate) expectBuiltEntry(migrate.args?.[0] ?? "", name as Service, "migrate");
      },
    );
  });
});
