/**
 * Tokens from the outside (issue #9): an engine that requires them refuses the CLI and the console
 * without a valid one, with the reason, and serves them with one. (The SDK side is covered in
 * test/engine/auth.test.ts.)
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedPort, consoleFetch, EngineProcess, runSvc, SVC_BIN, tempDir, until } from './helpers/cli.js';

const ADMIN = 'e2e-admin-token-0123456789';

describe('an engine that requires tokens', () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  let consoleProc: ChildProcess | undefined;

  before(async () => {
    writeFileSync(
      join(tmp.dir, 'config.yaml'),
      `engine:\n  host: 127.0.0.1\n  port: 0\n  auth:\n    tokens:\n      - name: admin\n        token: ${ADMIN}\n        admin: true\nworkers: []\n`,
    );
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
  });
  after(async () => {
    consoleProc?.kill('SIGKILL');
    await engine?.stop();
    tmp.remove();
  });

  test('says at start that tokens are required', () => {
    assert.match(engine.stdout, /auth: 1 token\(s\) configured; connections without a valid token are refused/);
  });

  test('svc trigger without a token, or with a wrong one, fails with the reason; with the token it works', async () => {
    // From outside the project: inside it, the CLI would use the engine's own local token.
    const elsewhere = tmpdir();
    const none = await runSvc(['trigger', 'engine::health::check', '--address', engine.url], { cwd: elsewhere });
    assert.equal(none.code, 1);
    assert.match(none.stderr, /error: unauthorized: The engine at .* refused this connection: This engine requires a token: set SVC_TOKEN/);
    const wrong = await runSvc(['trigger', 'engine::health::check', '--address', engine.url], { cwd: elsewhere, env: { SVC_TOKEN: 'not-the-token-of-this-engine' } });
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /error: unauthorized: .*The token presented is not valid for this engine/);
    const ok = await runSvc(['trigger', 'engine::health::check', '--address', engine.url], { cwd: elsewhere, env: { SVC_TOKEN: ADMIN } });
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal((JSON.parse(ok.stdout) as { status: string }).status, 'ok');
  });

  test('local project commands use the engine token from .svc/engine.json', async () => {
    // `svc worker list` in the project directory needs no SVC_TOKEN: the engine left its own token
    // (owner-readable) beside config.yaml.
    const list = await runSvc(['worker', 'list'], { cwd: tmp.dir });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /No workers in config\.yaml/);
  });

  test('svc console without a token shows why it is refused; with the token it connects', async () => {
    const start = async (env: Record<string, string>): Promise<{ proc: ChildProcess; port: number }> => {
      const port = await closedPort();
      const childEnv = { ...process.env, ...env };
      if (!('SVC_TOKEN' in env)) delete childEnv.SVC_TOKEN;
      const proc = spawn(process.execPath, [SVC_BIN, 'console', '--port', String(port), '--address', engine.url], { cwd: tmpdir(), env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      await until('svc console to listen', () => /svc console on http/.test(out), 10_000);
      return { proc, port };
    };
    const refused = await start({});
    consoleProc = refused.proc;
    const status = await until('the console to report the refusal', async () => {
      const s = (await (await consoleFetch(`http://127.0.0.1:${refused.port}`, '/api/status')).json()) as { connected: boolean; error?: { code: string; message: string } };
      return s.error ? s : null;
    }, 10_000);
    assert.equal(status.connected, false);
    assert.equal(status.error!.code, 'unauthorized');
    assert.match(status.error!.message, /requires a token/);
    const call = await consoleFetch(`http://127.0.0.1:${refused.port}`, '/api/call', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ function_id: 'engine::workers::list', payload: {} }),
    });
    assert.equal(call.status, 503);
    assert.equal(((await call.json()) as { error: { code: string } }).error.code, 'unauthorized');
    refused.proc.kill('SIGKILL');

    const allowed = await start({ SVC_TOKEN: ADMIN });
    consoleProc = allowed.proc;
    await until('the console to connect', async () => ((await (await consoleFetch(`http://127.0.0.1:${allowed.port}`, '/api/status')).json()) as { connected: boolean }).connected, 10_000);
    allowed.proc.kill('SIGKILL');
  });
});
