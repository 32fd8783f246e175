import { defineConfig } from 'vite';

// TSX is compiled by Vite's esbuild with React's automatic JSX runtime; no React plugin needed
// (no fast refresh in `vite dev`, which the console does not rely on).
export default defineConfig({
  base: './',
  esbuild: { jsx: 'automatic' },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false },
  server: {
    // `npm run dev` in console/ proxies the API to a running `svc console`.
    proxy: { '/api': 'http://127.0.0.1:3113' },
  },
});
