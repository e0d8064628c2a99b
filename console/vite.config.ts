// Vite build of the web console (console/README.md); scripts/build.mjs runs it into the build's
// console/ folder, which the service serves at /console (src/console/index.ts).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  publicDir: false,
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    target: 'es2022',
    // The policy admits no inline script: the module preload polyfill is left out (every
    // browser the console supports preloads modules itself), and no asset is inlined as data.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
  },
});
