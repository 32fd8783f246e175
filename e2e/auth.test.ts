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

  test('a token given in --address is never echoed: svc console output, /api/status, /api/call errors, CLI errors', async () => {
    const start = async (address: string): Promise<{ proc: ChildProcess; base: string; out: () => string }> => {
      const port = await closedPort();
      const env = { ...process.env };
      delete env.SVC_TOKEN;
      const proc = spawn(process.execPath, [SVC_BIN, 'console', '--port', String(port), '--address', address], { cwd: tmpdir(), env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      await until('svc console to listen', () => /svc console on http/.test(out), 10_000);
      return { proc, base: `http://127.0.0.1:${port}`, out: () => out };
    };
    // The token works from the URL, and shows as *** wherever the address is shown.
    const withToken = await start(`${engine.url}/?token=${ADMIN}`);
    consoleProc = withToken.proc;
    await until('the console to say it connected', () => /connected to the engine at/.test(withToken.out()), 10_000);
    const status = (await (await consoleFetch(withToken.base, '/api/status')).json()) as { connected: boolean; engine_url: string };
    assert.equal(status.connected, true);
    assert.equal(status.engine_url, `${engine.url}/?token=***`);
    assert.ok(!withToken.out().includes(ADMIN), withToken.out());
    assert.match(withToken.out(), /\?token=\*\*\*/);
    withToken.proc.kill('SIGKILL');

    // An engine that is not there: the console's call errors name the address without the token.
    const closed = await closedPort();
    const gone = await start(`ws://127.0.0.1:${closed}/?token=${ADMIN}`);
    consoleProc = gone.proc;
    const call = await consoleFetch(gone.base, '/api/call', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ function_id: 'engine::workers::list' }) });
    const body = JSON.stringify(await call.json());
    assert.equal(call.status, 503);
    assert.ok(!body.includes(ADMIN), body);
    assert.ok(!JSON.stringify(await (await consoleFetch(gone.base, '/api/status')).json()).includes(ADMIN));
    gone.proc.kill('SIGKILL');

    // CLI errors: an engine that cannot be reached, and one that refuses the token.
    const unreachable = await runSvc(['trigger', 'engine::health::check', '--address', `ws://127.0.0.1:${closed}/?token=${ADMIN}`], { cwd: tmpdir() });
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, /connection_failed: Cannot reach the engine at ws:\/\/127\.0\.0\.1:\d+\/\?token=\*\*\*/);
    assert.ok(!unreachable.stderr.includes(ADMIN), unreachable.stderr);
    const wrongSecret = 'a-wrong-but-secret-token-0123456789';
    const refused = await runSvc(['trigger', 'engine::health::check', '--address', `${engine.url}/?token=${wrongSecret}`], { cwd: tmpdir() });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /unauthorized: The engine at .*token=\*\*\* refused this connection/);
    assert.ok(!refused.stderr.includes(wrongSecret), refused.stderr);
  });
});
