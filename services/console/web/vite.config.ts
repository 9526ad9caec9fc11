import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

/**
 * The console's web app, served by the console service under /console/ (docs/console.md). The build
 * must pass a strict Content-Security-Policy (default-src 'self'): no inline script or style, CSS as
 * a file, no eval.
 */
// biome-ignore lint/style/noDefaultExport: Vite reads its configuration from a default export.
export default defineConfig({
  base: "/console/",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // Never inline assets as data: URLs (CSP img-src/font-src 'self').
    assetsInlineLimit: 0,
    cssCodeSplit: true,
    sourcemap: false,
    rolldownOptions: {
      treeshake: {
        // @gw/contracts is imported for its permission matrix; its zod schemas (and zod) have no
        // side effects the app needs, so unused ones are dropped.
        moduleSideEffects: (id: string) => !/[\\/](packages[\\/]contracts|node_modules[\\/](\.pnpm[\\/])?zod)[\\/@]/.test(id),
      },
    },
  },
  server: {
    // `pnpm dev` next to a running console service: the API is proxied to it.
    proxy: { "/console/api": { target: process.env.CONSOLE_API ?? "http://127.0.0.1:8080", changeOrigin: false } },
  },
});
