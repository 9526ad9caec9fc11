/**
 * `pnpm build`: each service's entry points bundled with esbuild into services/<name>/dist/, the
 * JavaScript the images run (`node --enable-source-maps services/<name>/dist/main.js`). Development
 * and `pnpm start` run the TypeScript sources through tsx; the end-to-end tests' meshes run these
 * bundles, as the images do (test/e2e/bundles.ts builds them when their sources have changed).
 *
 * Decisions, each for a reason:
 * - ESM, one file per entry point plus the code its entries share (a chunk beside them in dist/:
 *   ingress's main and migrate share nearly everything, so this halves the bytes built and shipped).
 *   The workspace packages (@gw/*) are bundled in, as are almost all npm packages (see `external`),
 *   so the services' images need no node_modules and start without thousands of module lookups.
 *   The one native add-on a service loads is copied beside its bundle instead (see `shipped`).
 * - platform node, target node20 (package.json's engines; the images run a newer Node, which is fine).
 * - Not minified: a bundle is parsed once at start, size hardly matters on a server, and readable
 *   code keeps heap snapshots and profiles legible. No keepNames either: it would add a call per
 *   function created, and some are created per request.
 * - Source maps beside each bundle, with the sources inside them (no TypeScript ships in the image,
 *   yet a debugger attached to a container still shows it); run with --enable-source-maps, stack
 *   traces name the TypeScript file and line.
 * - A `require` made with createRequire at the top of each bundle: CommonJS packages bundled into
 *   ESM (express, pg, …) require Node's built-ins, which esbuild's shim can only do through it.
 * - `__GW_BUILD__` (see packages/config/src/build-info.ts) is the root package.json's version and the
 *   commit built (GW_BUILD_COMMIT when set, as in the image build, which has no .git; else git).
 * - Files read at run time: see `runtimeFiles` below; the build fails when a bundled workspace file
 *   starts using import.meta.url (or __dirname) without a line there saying how its bundle finds
 *   what it reads.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { createRequire, isBuiltin } from "node:module";
import { basename, dirname, join, relative, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build, type Metafile, type Plugin } from "esbuild";

/** What `pnpm build` makes: for each service, its entry points (services/<name>/src/<entry>.ts). */
export const serviceEntries = {
  ingress: ["main", "migrate"], // migrate: the init container's entry (deploy/k8s, docker-compose)
  inference: ["main"],
  tools: ["main"],
  jobs: ["main", "migrate"],
  usage: ["main", "migrate"],
  console: ["main", "migrate"],
  // mesh: the six built services as processes (it spawns their dist/main.js when itself built).
  embedded: ["main", "mesh"],
} as const satisfies Record<string, readonly string[]>;
export type BuiltService = keyof typeof serviceEntries;

/**
 * npm packages left as imports, each for a reason; everything else is bundled.
 * - @electric-sql/pglite loads its WASM, data file and extension archives from beside its own
 *   modules (new URL("./pglite.wasm", import.meta.url)), which bundling would break. Only the
 *   embedded gateway uses it, so it is a dependency of @gw/embedded itself (a bundle resolves its
 *   externals from its own package's node_modules), and `sideEffectFree` below lets the other
 *   bundles drop @gw/db's PGlite module, import included.
 * - @node-rs/argon2 (the console's password hashes) is a native add-on: a small loader that requires
 *   the prebuilt binary of the platform it runs on from a per-platform package
 *   (@node-rs/argon2-linux-x64-gnu, …; the install fetched only this platform's). esbuild cannot
 *   bundle a .node file, so the loader stays an import and the build copies it, with the binary
 *   installed here, beside each bundle that imports it (`shipped` below): console's, and embedded's,
 *   which holds the console too. The image needs nothing installed, but it must be built on the
 *   platform it runs on (deploy/Dockerfile's build stage is: no --platform=$BUILDPLATFORM there).
 * - pg-native and @node-rs/xxhash are optional native add-ons that pg and @redis/client import only
 *   when asked (pg.native; client-side-cache digests), which the gateway never does; not installed.
 * pino stays bundled: the gateway writes through pino.destination and pino-pretty as a stream, never
 * through worker transports (which would need thread-stream's worker files on disk).
 */
export const external = ["@electric-sql/pglite", "@node-rs/argon2", "pg-native", "@node-rs/xxhash"] as const;
/** Externals a bundle may import without having them installed (they are loaded only on demand). */
const optionalExternals = new Set(["pg-native", "@node-rs/xxhash"]);
/**
 * Externals copied into dist/node_modules/ of every bundle that imports them, where its resolution
 * looks first: the package as installed for the module importing it, and the packages it requires,
 * its optional dependencies included when installed (a native add-on's binary for this platform).
 * The build then loads each from there in a child process, so a missing binary fails the build, not
 * the service's start. Exported for the tests.
 */
export const shipped = ["@node-rs/argon2"] as const;
const shippedExternals = new Set<string>(shipped);

/**
 * Workspace modules bundled although unused by most bundles, whose only side effect is importing an
 * external: marked side-effect free so a bundle that does not call them drops them and the import.
 */
const sideEffectFree = ["packages/db/src/pglite-db.ts"];

/**
 * A file a module reads at run time, found from its own location: `beside` sits next to the source
 * (the build copies it next to the bundle); `packageFile` is resolved as a package's file from where
 * the module runs (the build copies that one file to dist/node_modules/<path>, where the bundle's
 * resolution looks first, so the image needs no node_modules for it).
 */
type RuntimeFile = { beside: string } | { packageFile: string };

/**
 * Every workspace file that finds something at run time relative to itself, and how its bundle
 * finds it (after bundling, import.meta.url is services/<name>/dist/<file>.js):
 * - services/{ingress,jobs,usage,console}/src/service.ts: `../../<service>/migrations`, two levels up
 *   being services/ from src/ and from any service's dist/ alike (embedded's bundle holds them all).
 *   The console's also serves its web app from `../../console/web/dist` the same way: Vite's build
 *   (`pnpm --filter @gw/console-web build`), which this build does not make.
 * - services/ingress/src/limits/redis-limiter.ts reads ./sliding-window.lua when loaded.
 * - services/ingress/src/docs/reference-page.ts serves Redoc's standalone bundle, resolved as a
 *   package file (embedded, which does not depend on redoc, gets it too this way).
 * - packages/config/src/env.ts, packages/cli/src/admin-token.ts: walk up to the repository root,
 *   which they find from dist/ as from src/.
 * - services/embedded/src/mesh.ts: tells whether it runs built (then it starts the built services).
 */
const runtimeFiles: Record<string, readonly RuntimeFile[]> = {
  "services/ingress/src/service.ts": [],
  "services/jobs/src/service.ts": [],
  "services/usage/src/service.ts": [],
  "services/console/src/service.ts": [],
  "services/ingress/src/limits/redis-limiter.ts": [{ beside: "sliding-window.lua" }],
  "services/ingress/src/budgets/redis-budget-store.ts": [{ beside: "budget.lua" }],
  "services/ingress/src/docs/reference-page.ts": [{ packageFile: "redoc/bundles/redoc.standalone.js" }],
  "packages/config/src/env.ts": [],
  "packages/cli/src/admin-token.ts": [],
  "services/embedded/src/mesh.ts": [],
};
const locatesItself = /import\.meta\.(url|dirname|filename)|\b__dirname\b|\b__filename\b/;

export const repositoryRoot = fileURLToPath(new URL("..", import.meta.url));

export interface BuiltFile {
  service: BuiltService;
  /** Relative to the repository root, e.g. services/ingress/dist/main.js. */
  file: string;
  bytes: number;
  /** The npm packages it imports at run time (Node built-ins aside). */
  externals: string[];
}

export interface BuildOptions {
  /** Only these services (default: all). */
  services?: readonly BuiltService[];
  root?: string;
}

/** Bundles the services into services/<name>/dist/ (emptied first); returns what it wrote. */
export async function buildServices(options: BuildOptions = {}): Promise<BuiltFile[]> {
  const root = options.root ?? repositoryRoot;
  const info = JSON.stringify({ version: packageVersion(root), commit: buildCommit(root) });
  const names = options.services ?? (Object.keys(serviceEntries) as BuiltService[]);
  const built = await Promise.all(names.map((service) => buildService(root, service, info)));
  return built.flat();
}

async function buildService(root: string, service: BuiltService, info: string): Promise<BuiltFile[]> {
  const dir = join(root, "services", service);
  const outdir = join(dir, "dist");
  rmSync(outdir, { recursive: true, force: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(serviceEntries[service].map((entry) => [entry, join(dir, "src", `${entry}.ts`)])),
    outdir,
    bundle: true,
    platform: "node",
    format: "esm",
    // Chunks stay in dist/ itself: a module's import.meta.url must be in the folder its entry is in.
    splitting: true,
    chunkNames: "[name]-[hash]",
    target: "node20",
    sourcemap: true,
    external: [...external],
    define: { __GW_BUILD__: info },
    banner: { js: 'import { createRequire as __gwCreateRequire } from "node:module";\nconst require = __gwCreateRequire(import.meta.url);' },
    plugins: [markSideEffectFree(root)],
    metafile: true,
    logLevel: "silent",
  });
  for (const warning of result.warnings) process.stderr.write(`[build] ${service}: ${warning.text}\n`);
  copyRuntimeFiles(root, result.metafile, outdir);
  copyShippedExternals(root, result.metafile, outdir);
  return Object.entries(result.metafile.outputs)
    .filter(([file]) => file.endsWith(".js"))
    .map(([file, output]) => {
      const externals = [...new Set(output.imports.filter((i) => i.external && !i.path.startsWith("node:") && !isBuiltin(i.path)).map((i) => i.path))].sort();
      for (const name of externals) {
        if (!optionalExternals.has(name) && !shippedExternals.has(name) && !existsSync(join(dir, "node_modules", name, "package.json"))) {
          throw new Error(`${file} imports ${name}, which is not a dependency of services/${service}/package.json: add it there, or bundle it`);
        }
      }
      return { service, file, bytes: output.bytes, externals };
    });
}

/** Copies the `shipped` externals the bundles import, with what they require, into dist/node_modules/, and loads each from there. */
function copyShippedExternals(root: string, metafile: Metafile, outdir: string): void {
  const copied = new Map<string, string>();
  for (const [input, { imports }] of Object.entries(metafile.inputs)) {
    for (const name of new Set(imports.filter((i) => i.external && shippedExternals.has(i.path)).map((i) => i.path))) {
      copyPackage(name, join(root, input), join(outdir, "node_modules"), copied, input);
    }
  }
  for (const name of shipped.filter((n) => copied.has(n))) {
    const found = createRequire(join(outdir, "main.js")).resolve(name);
    if (!found.startsWith(join(outdir, "node_modules", name) + sep)) throw new Error(`${name} resolves to ${found} from ${outdir}, not to its copy`);
    try {
      // Loaded as the bundle will load it, from dist/: a native add-on finds its platform's binary or throws.
      execFileSync(process.execPath, ["--input-type=commonjs", "-e", `require(${JSON.stringify(name)})`], { cwd: outdir, stdio: ["ignore", "ignore", "pipe"] });
    } catch (err) {
      const stderr = String((err as { stderr?: Buffer }).stderr ?? "").trim();
      throw new Error(
        `${name}, copied to ${relative(root, outdir)}/node_modules, does not load there (${process.platform}-${process.arch}): ${stderr.split("\n").slice(-3).join(" ")}`,
      );
    }
  }
}

/** Copies one package (resolved from `from`, a file) and, recursively, its dependencies and installed optional dependencies, flat into `into`. */
function copyPackage(name: string, from: string, into: string, copied: Map<string, string>, importer: string, optional = false): void {
  let manifest: string;
  try {
    manifest = createRequire(from).resolve(`${name}/package.json`);
  } catch (err) {
    if (optional) return; // another platform's binary, not installed here
    throw new Error(
      `${importer} needs ${name}, which does not resolve from ${relative(dirname(importer), from) || from}: ${(err as Error).message.split("\n")[0]}`,
    );
  }
  const dir = realpathSync(dirname(manifest));
  const earlier = copied.get(name);
  if (earlier !== undefined) {
    if (earlier !== dir) throw new Error(`two copies of ${name} would ship in one dist/ (${earlier} and ${dir})`);
    return;
  }
  copied.set(name, dir);
  // Its own dependencies are copied flat beside it, not from a nested node_modules; type declarations stay behind.
  cpSync(dir, join(into, name), {
    recursive: true,
    dereference: true,
    filter: (path) => !relative(dir, path).split(sep).includes("node_modules") && !/\.d\.[cm]?ts$/.test(path),
  });
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
    dependencies?: Record<string, string>;
    optionalDependencies?: Record<string, string>;
  };
  const own = join(dir, "package.json");
  for (const dep of Object.keys(pkg.dependencies ?? {})) copyPackage(dep, own, into, copied, importer);
  for (const dep of Object.keys(pkg.optionalDependencies ?? {})) copyPackage(dep, own, into, copied, importer, true);
}

/** Marks the `sideEffectFree` modules (matched by their import's last segment first, so esbuild asks the plugin about little else). */
function markSideEffectFree(root: string): Plugin {
  const files = new Set(sideEffectFree.map((file) => join(root, file)));
  const names = sideEffectFree.map((file) => basename(file, ".ts").replace(/[^\w]/g, "\\$&"));
  return {
    name: "side-effect-free",
    setup(b) {
      b.onResolve({ filter: new RegExp(`/(${names.join("|")})(\\.ts)?$`) }, async (args) => {
        if (args.pluginData === files) return undefined;
        const resolved = await b.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: files });
        return files.has(resolved.path) ? { ...resolved, sideEffects: false } : resolved;
      });
    },
  };
}

/** Copies the files `runtimeFiles` names for each module a bundle holds; refuses unknown self-locating modules. */
function copyRuntimeFiles(root: string, metafile: Metafile, outdir: string): void {
  for (const input of Object.keys(metafile.inputs)) {
    if (input.includes("node_modules/") || !input.endsWith(".ts")) continue;
    const files = runtimeFiles[input];
    if (files === undefined) {
      if (locatesItself.test(readFileSync(join(root, input), "utf8"))) {
        throw new Error(`${input} locates files from its own path, which is the bundle's after building: say how in runtimeFiles (scripts/build.ts)`);
      }
      continue;
    }
    for (const file of files) {
      const [from, to] =
        "beside" in file
          ? [join(root, dirname(input), file.beside), join(outdir, file.beside)]
          : [createRequire(join(root, input)).resolve(file.packageFile), join(outdir, "node_modules", file.packageFile)];
      mkdirSync(dirname(to), { recursive: true });
      copyFileSync(from, to);
    }
  }
}

function packageVersion(root: string): string {
  const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version?: unknown };
  return typeof version === "string" ? version : "unknown";
}

function buildCommit(root: string): string {
  const given = process.env.GW_BUILD_COMMIT?.trim();
  if (given) return given;
  try {
    return (
      execFileSync("git", ["rev-parse", "--short=12", "HEAD"], { cwd: root, stdio: ["ignore", "pipe", "ignore"] })
        .toString()
        .trim() || "unknown"
    );
  } catch {
    return "unknown";
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const started = performance.now();
  const files = await buildServices();
  const size = (bytes: number) => (bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MB` : `${Math.ceil(bytes / 1024)} kB`).padStart(8);
  for (const f of files) {
    // The optional add-ons are never loaded; listing them would only alarm.
    const needed = f.externals.filter((name) => !optionalExternals.has(name));
    process.stdout.write(
      `${relative(process.cwd(), join(repositoryRoot, f.file)).padEnd(42)}${size(f.bytes)}${needed.length > 0 ? `  imports ${needed.join(", ")}` : ""}\n`,
    );
  }
  process.stdout.write(`built ${files.length} files in ${Math.round(performance.now() - started)} ms\n`);
}
