/**
 * A vendored SDK replaced by another build of the same version (the SDKs stay 0.1.0 while their
 * code changes): the next install of the worker notices it and the environment ends up with the
 * new build, with the real package managers (npm, pip) doing the installing. Without it, the
 * install was skipped as cached, and even a forced one kept the old build: pip calls it already
 * installed, npm takes it from its cache by package-lock.json's integrity.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadManifest } from '../../src/supervisor/manifest.js';
import { ensureInstalled } from '../../src/supervisor/install.js';
import { vendorSdk } from '../../src/cli/vendor.js';

const root = mkdtempSync(join(tmpdir(), 'svc-install-'));
after(() => rmSync(root, { recursive: true, force: true }));

const manifest = (name: string, kind: 'python' | 'typescript'): string =>
  `name: ${name}\nruntime:\n  kind: ${kind}\n  package_manager: ${kind === 'python' ? 'pip' : 'npm'}\n  entry: w\nscripts:\n  start: "true"\n`;

/** A stand-in SDK package, named and versioned as svc's (so pip and npm treat it as the same version each time), saying `build`. */
function packSdk(kind: 'python' | 'typescript', build: number, vendor: string): void {
  const src = mkdtempSync(join(root, 'src-'));
  for (const f of readdirSync(vendor)) rmSync(join(vendor, f));
  if (kind === 'typescript') {
    writeFileSync(join(src, 'package.json'), JSON.stringify({ name: 'svc-sdk', version: '0.1.0', main: 'index.js' }));
    writeFileSync(join(src, 'index.js'), `module.exports = ${build};\n`);
    execFileSync('npm', ['pack', '--silent', '--pack-destination', vendor], { cwd: src, stdio: 'ignore' });
  } else {
    // A wheel is a zip of the package and its metadata: written here, so no build backend is needed.
    const py = `
import base64, hashlib, sys, zipfile
files = {"svc_sdk/__init__.py": "BUILD = ${build}\\n",
         "svc_sdk-0.1.0.dist-info/METADATA": "Metadata-Version: 2.1\\nName: svc_sdk\\nVersion: 0.1.0\\n",
         "svc_sdk-0.1.0.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
record = [f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b'=').decode()},{len(t.encode())}" for p, t in files.items()]
files["svc_sdk-0.1.0.dist-info/RECORD"] = "\\n".join(record + ["svc_sdk-0.1.0.dist-info/RECORD,,"]) + "\\n"
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for p, t in files.items(): z.writestr(p, t)
`;
    execFileSync('python3', ['-c', py, join(vendor, 'svc_sdk-0.1.0-py3-none-any.whl')]);
  }
}

function installedBuild(kind: 'python' | 'typescript', dir: string): number {
  const out =
    kind === 'typescript'
      ? execFileSync('node', ['-e', 'console.log(require("svc-sdk"))'], { cwd: dir, encoding: 'utf8' })
      : execFileSync(join(dir, '.venv', 'bin', 'python'), ['-c', 'import svc_sdk; print(svc_sdk.BUILD)'], { cwd: dir, encoding: 'utf8' });
  return Number(out.trim());
}

describe('a vendored SDK rebuilt under the same version', () => {
  for (const kind of ['typescript', 'python'] as const) {
    test(`${kind}: the next install puts the new build into the worker's environment`, { timeout: 120_000 }, async () => {
      const dir = join(root, kind);
      const vendor = join(dir, 'vendor');
      mkdirSync(vendor, { recursive: true });
      writeFileSync(join(dir, 'svc.worker.yaml'), manifest(`w-${kind}`, kind));
      writeFileSync(join(dir, 'w'), '');
      if (kind === 'typescript') writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'w', version: '1.0.0', private: true, dependencies: { 'svc-sdk': 'file:vendor/svc-sdk-0.1.0.tgz' } }, null, 2)}\n`);
      else writeFileSync(join(dir, 'requirements.txt'), './vendor/svc_sdk-0.1.0-py3-none-any.whl\n');
      const m = loadManifest(dir);
      packSdk(kind, 1, vendor);
      assert.equal((await ensureInstalled(m)).status, 'installed');
      assert.equal(installedBuild(kind, dir), 1);
      assert.equal((await ensureInstalled(m)).status, 'cached', 'nothing changed');

      packSdk(kind, 2, vendor); // what svc sdk update does with a changed SDK: same file name, other bytes
      const lines: string[] = [];
      assert.equal((await ensureInstalled(m, { onLine: (l) => lines.push(l) })).status, 'installed', 'the changed package is noticed');
      assert.equal(installedBuild(kind, dir), 2, `the new build is installed:\n${lines.join('\n')}`);
      assert.ok(lines.some((l) => l.includes('the vendored SDK changed since the last install')));
      assert.equal((await ensureInstalled(m)).status, 'cached', 'and recorded');
    });
  }

  test('typescript: after svc sdk update, a hand-run npm install in the worker takes the new build too', { timeout: 120_000 }, () => {
    // svc sdk update rewrites package-lock.json's integrity of the tarball (src/cli/vendor.ts,
    // relock). Left as it was, npm install called the installed build up to date and kept it;
    // only svc worker restart (refreshSdk) put the new one in.
    const dir = join(root, 'by-hand');
    const vendor = join(dir, 'vendor');
    mkdirSync(vendor, { recursive: true });
    writeFileSync(join(dir, 'svc.worker.yaml'), manifest('w-by-hand', 'typescript'));
    writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'w', version: '1.0.0', private: true, dependencies: { 'svc-sdk': 'file:vendor/svc-sdk-0.1.0.tgz' } }, null, 2)}\n`);
    const npmInstall = (): void => void execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'ignore' });
    packSdk('typescript', 1, vendor);
    npmInstall();
    assert.equal(installedBuild('typescript', dir), 1);

    const next = mkdtempSync(join(root, 'next-'));
    packSdk('typescript', 2, next); // the SDK of a newer svc, under the same version
    const r = vendorSdk(dir, { language: 'typescript', version: '0.1.0', file: 'svc-sdk-0.1.0.tgz', path: join(next, 'svc-sdk-0.1.0.tgz') });
    assert.equal(r.relocked, true);
    npmInstall();
    assert.equal(installedBuild('typescript', dir), 2, 'npm install kept the build installed before');
  });
});
