import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "@gw/config";
import { assertOpenAI, createTestDatabase, freePort, startOpenAIUpstream, type UpstreamEmulator } from "@gw/testkit";
import { imageCommand, layOutImage } from "../../deploy/test/dockerfile-image";
import type { BuiltFile } from "../../scripts/build";
import { ensureBundles } from "./bundles";
import { signInOperator } from "./console-client";
import { adminClient, eventually, startTestMesh, type RunningMesh } from "./harness";

/**
 * What `pnpm build` makes, run as the images run it: `node --enable-source-maps
 * services/<name>/dist/<entry>.js`, with no tsx and no TypeScript loader anywhere. The six services
 * run from the files their images hold, laid out from deploy/Dockerfile's COPY lines (no node_modules
 * but the console's password add-on in its dist/, no sources), in a folder with no node_modules
 * above it; the embedded default, which has no image, from the checkout.
 */
const root = repoRoot();
const meshImages = ["ingress", "inference", "tools", "jobs", "usage", "console"] as const;
let app: string;
const dist = (service: string, entry = "main", at = root) => join(at, "services", service, "dist", `${entry}.js`);
const UPSTREAM_KEY = "sk-built-upstream";
const config = (upstreamURL: string) => `
providers:
  up: { kind: openai, base_url: "${upstreamURL}", api_key_env: BUILT_UPSTREAM_KEY }
models:
  chat-built: { type: chat, routes: [{ provider: up, model: gpt-4o-mini }] }
plans:
  plus:       { requests_per_minute: 600,  tokens_per_minute: 1000000 }
  pro:        { requests_per_minute: 600,  tokens_per_minute: 1000000 }
  enterprise: { requests_per_minute: 6000, tokens_per_minute: 10000000 }
`;

/** Runs a built entry point to its end; its exit code and everything it printed. */
function runBuilt(file: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--enable-source-maps", file], {
      cwd: app,
      env: { PATH: process.env.PATH, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, output }));
  });
}

let built: BuiltFile[];
let upstream: UpstreamEmulator;

beforeAll(async () => {
  // As deploy/Dockerfile's build stage: the console's web app (which its image holds), then the bundles
  // (built once for every test file's meshes, under a lock: never rebuilt while one may be starting).
  execFileSync("pnpm", ["--filter", "@gw/console-web", "build"], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  built = await ensureBundles();
  app = mkdtempSync(join(tmpdir(), "gw-images-"));
  for (const name of meshImages) layOutImage(name, app);
  upstream = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
});

afterAll(async () => {
  await upstream?.close();
  if (app) rmSync(app, { recursive: true, force: true });
});

/** Every file under dir, relative to it. */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1));

describe("pnpm build", () => {
  it("when the services are built, then every entry point is an ESM bundle with a source map, leaving as imports only PGlite and the password add-on", () => {
    const files = built.map((f) => f.file);
    for (const [service, entries] of Object.entries({
      ingress: ["main", "migrate"],
      inference: ["main"],
      tools: ["main"],
      jobs: ["main", "migrate"],
      usage: ["main", "migrate"],
      console: ["main", "migrate"],
      embedded: ["main", "mesh"],
    })) {
      for (const entry of entries) {
        expect(files).toContain(`services/${service}/dist/${entry}.js`);
        expect(existsSync(join(root, "services", service, "dist", `${entry}.js.map`)), `${service} ${entry}.js.map`).toBe(true);
      }
    }
    // PGlite (its WASM and data files sit beside its modules) is left to node_modules, and only
    // embedded runs it; the console's password hashing (a native add-on) is left as an import the
    // build satisfies beside the bundle; the optional native add-ons are imported only on demand, never installed.
    const needed = (service: string) =>
      [...new Set(built.filter((f) => f.service === service).flatMap((f) => f.externals))]
        .filter((name) => !["pg-native", "@node-rs/xxhash"].includes(name))
        .sort();
    for (const service of ["ingress", "inference", "tools", "jobs", "usage"]) expect(needed(service), service).toEqual([]);
    expect(needed("console")).toEqual(["@node-rs/argon2"]);
    expect(needed("embedded")).toEqual(["@electric-sql/pglite", "@node-rs/argon2"]);
    // …copied, with the binary of this platform, into the dist/ of both bundles that import it.
    for (const service of ["console", "embedded"]) {
      const addOns = readdirSync(join(root, "services", service, "dist", "node_modules", "@node-rs")).sort();
      expect(addOns, service).toEqual(["argon2", expect.stringMatching(new RegExp(`^argon2-${process.platform}-${process.arch}\\b`))]);
    }
  });

  it("when the images' files are laid out as the Dockerfile copies them, then they hold bundles, source maps and migrations, and no TypeScript or installed packages", () => {
    const files = filesUnder(app);
    for (const name of meshImages) expect(files).toContain(`services/${name}/dist/main.js`);
    expect(files).toEqual(
      expect.arrayContaining([
        "services/ingress/dist/main.js.map",
        "services/jobs/migrations/0001_jobs.sql",
        "services/console/migrations/0001_console.sql",
        // The console's web app, where its bundle looks for it.
        "services/console/web/dist/index.html",
      ]),
    );
    expect(files.filter((f) => f.endsWith(".ts"))).toEqual([]);
    // Packages: the reference page's renderer, one file copied where the bundle resolves it, and the
    // console's password add-on with this platform's binary, beside its bundle; nothing else.
    const packages = files.filter((f) => f.includes("node_modules/"));
    expect(packages.filter((f) => !f.startsWith("services/console/dist/node_modules/@node-rs/argon2"))).toEqual([
      "services/ingress/dist/node_modules/redoc/bundles/redoc.standalone.js",
    ]);
    expect(packages).toEqual(expect.arrayContaining(["services/console/dist/node_modules/@node-rs/argon2/index.js"]));
    expect(packages.some((f) => /^services\/console\/dist\/node_modules\/@node-rs\/argon2-[\w-]+\/argon2\.[\w-]+\.node$/.test(f))).toBe(true);
    // Nothing above the laid-out files could supply a package the images lack.
    expect(existsSync(join(app, "node_modules"))).toBe(false);
  });

  it("when the images' migration entries run against a fresh database, then they apply their schemas and exit 0", async () => {
    const db = await createTestDatabase();
    try {
      for (const service of ["ingress", "jobs", "console"]) {
        const run = await runBuilt(dist(service, "migrate", app), { DATABASE_URL: db.url, LOG_LEVEL: "info" });
        expect(run.code, run.output).toBe(0);
        expect(run.output).toContain(`"schema":"${service}"`);
        expect(run.output).toContain("0001_");
      }
    } finally {
      await db.drop();
    }
  });

  it("when built code fails, then the stack trace in its log names the TypeScript sources", async () => {
    const closed = await freePort();
    const run = await runBuilt(dist("ingress", "migrate", app), { DATABASE_URL: `postgres://postgres@127.0.0.1:${closed}/none`, LOG_LEVEL: "info" });
    expect(run.code, run.output).toBe(1);
    const stack =
      (JSON.parse(run.output.split("\n").find((line) => line.includes("migrations failed")) ?? "{}") as { err?: { stack?: string } }).err?.stack ?? "";
    // Paths as the sources sat beside the bundle when it was built (in an image: /app/…).
    expect(stack).toContain(join(app, "services/ingress/src/migrate.ts:"));
    expect(stack).toContain(join(app, "packages/db/src/migrate.ts:"));
    expect(stack).not.toMatch(/dist\/[\w-]+\.js/);
  });
});

describe("when the six services run from their images' files", () => {
  let gw: RunningMesh | undefined;

  afterAll(async () => {
    await gw?.stop();
  });

  it("then each process runs its image's command and a chat call is answered through the upstream", async () => {
    gw = await startTestMesh(config(upstream.url), { BUILT_UPSTREAM_KEY: UPSTREAM_KEY }, { built: true, root: app });
    for (const [name, child] of Object.entries(gw.mesh.processes)) {
      expect(["node", ...child.spawnargs.slice(1)]).toEqual(imageCommand(name).map((arg) => arg.replace(/^\/app\//, `${app}/`)));
    }
    const admin = adminClient(gw.adminURL, gw.adminToken);
    const ws = await admin<{ id: string }>("POST", "/admin/workspaces", { name: "built", plan: "pro", models: ["chat-built"] });
    const { key } = await admin<{ key: string }>("POST", `/admin/workspaces/${ws.id}/keys`, {});
    const client = new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: "chat-built", messages: [{ role: "user", content: "hello from dist" }] });
    assertOpenAI("CreateChatCompletionResponse", completion);
    expect(completion.model).toBe("chat-built");
    expect(upstream.requests.at(-1)?.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
  });

  it("then the console, reached through ingress, serves its web app and hashes and checks passwords with the add-on its image holds", async () => {
    expect(gw, "the mesh above started").toBeDefined();
    const origin = `http://127.0.0.1:${gw!.ports.public}`;
    const page = await fetch(`${origin}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    // The admin API's POST /admin/users goes to the console, whose link sets a password (a hash)…
    const password = "built-console-password";
    const browser = await signInOperator(origin, gw!.adminURL, gw!.adminToken, "operator@built.example", password);
    expect(browser.session?.user.operator).toBe(true);
    expect((await browser.call("POST", "/sign-out")).status).toBe(204);
    // …and signing in with it checks one.
    expect((await browser.call("POST", "/sign-in", { email: "operator@built.example", password: "not the password" })).status).toBe(401);
    expect((await browser.call("POST", "/sign-in", { email: "operator@built.example", password })).status).toBe(200);
  });
});

describe("when the embedded default runs from its bundle", () => {
  let stop: (() => Promise<void>) | undefined;

  afterAll(async () => {
    await stop?.();
  });

  it("then it answers /readyz on PGlite, lists the configured models and serves the reference page's renderer", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gw-built-"));
    writeFileSync(join(dir, "gateway.config.yaml"), config(upstream.url));
    const ports = { public: await freePort(), admin: await freePort() };
    const adminToken = `admin_${"b".repeat(32)}`;
    const child = spawn(process.execPath, ["--enable-source-maps", dist("embedded")], {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        PORT: String(ports.public),
        ADMIN_PORT: String(ports.admin),
        GATEWAY_DATA_DIR: join(dir, "data"),
        GATEWAY_CONFIG: join(dir, "gateway.config.yaml"),
        GATEWAY_ADMIN_TOKEN: adminToken,
        BUILT_UPSTREAM_KEY: UPSTREAM_KEY,
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    stop = async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      expect(await exited, output).toBe(0);
    };

    const base = `http://127.0.0.1:${ports.public}`;
    const readyz = eventually(async () => {
      const res = await fetch(`${base}/readyz`);
      return res.ok ? ((await res.json()) as { checks?: Record<string, boolean> }) : undefined;
    }, 60_000);
    const ready = await Promise.race([
      readyz.catch((err: unknown) => Promise.reject(new Error(`${(err as Error).message}\n${output}`))),
      exited.then((code) => Promise.reject(new Error(`exited ${code}:\n${output}`))),
    ]);
    expect(ready?.checks).toMatchObject({ draining: false });

    const admin = adminClient(`http://127.0.0.1:${ports.admin}`, adminToken);
    const ws = await admin<{ id: string }>("POST", "/admin/workspaces", { name: "built-embedded", plan: "pro", models: ["chat-built"] });
    const { key } = await admin<{ key: string }>("POST", `/admin/workspaces/${ws.id}/keys`, {});
    const models = await new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 }).models.list();
    expect(models.data.map((m) => m.id)).toEqual(["chat-built"]);

    // The reference page's renderer is a package file the bundle resolves at run time (scripts/build.ts copies it).
    const page = await (await fetch(`${base}/docs`)).text();
    const script = /<script src="(docs\/[^"]+\.js)">/.exec(page)?.[1];
    expect(script, page).toBeDefined();
    expect((await fetch(`${base}/${script}`)).status).toBe(200);
  });
});
