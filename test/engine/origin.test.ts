/**
 * Issue 17 item 2: a web page of another origin must not drive an engine. Headless Chromium loads
 * a page from a server of its own (another origin, as any site on the internet would be) whose
 * script opens a WebSocket to the engine, lists workers and calls a function.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { Browser } from 'playwright-core';
import { parseConfig } from '../../src/daemon/config-file.js';
import { launchChromium, servePage } from '../helpers/chromium.js';
import { startEngine } from '../helpers/engine.js';
import { WorkerPool } from '../helpers/util.js';

/** What the page reports: the engine's answers, or how the socket ended before opening. */
interface Outcome {
  opened: boolean;
  closeCode?: number;
  workers?: string[];
  setResult?: unknown;
}

// The page connects to ?engine=<url>, lists workers and calls bank::set, then reports.
const ATTACK_PAGE = `<!doctype html><title>not the engine's page</title><script>
window.outcome = new Promise((resolve) => {
  const ws = new WebSocket(new URLSearchParams(location.search).get('engine'));
  const out = { opened: false };
  ws.onopen = () => {
    out.opened = true;
    ws.send(JSON.stringify({ type: 'invokefunction', invocation_id: 'list', function_id: 'engine::workers::list', data: {} }));
    ws.send(JSON.stringify({ type: 'invokefunction', invocation_id: 'set', function_id: 'bank::set', data: { key: 'password', value: 'pwned' } }));
  };
  ws.onmessage = (m) => {
    const f = JSON.parse(m.data);
    if (f.type !== 'invocationresult') return;
    if (f.invocation_id === 'list') out.workers = (f.result.workers || []).map((w) => w.name);
    if (f.invocation_id === 'set') out.setResult = f.result ?? f.error;
    if ('workers' in out && 'setResult' in out) resolve(out);
  };
  ws.onclose = (e) => resolve({ ...out, closeCode: e.code });
});
</script>`;

type Eng = Awaited<ReturnType<typeof startEngine>>;

describe('cross-origin WebSocket upgrades', { timeout: 60_000 }, () => {
  let page: Awaited<ReturnType<typeof servePage>>;
  let browser: Browser;
  let open: Eng;
  let allowing: Eng;
  const writes: unknown[] = [];
  const pools: WorkerPool[] = [];

  async function withBankWorker(eng: Eng): Promise<void> {
    const pool = new WorkerPool(() => eng.url);
    pools.push(pool);
    const w = pool.make('bank-worker');
    w.registerFunction('bank::set', (data) => {
      writes.push(data);
      return { stored: true };
    });
    await w.ready();
  }

  async function visit(engineUrl: string): Promise<Outcome> {
    const tab = await browser.newPage();
    try {
      await tab.goto(`${page.origin}/?engine=${encodeURIComponent(engineUrl)}`);
      return (await tab.evaluate('window.outcome')) as Outcome;
    } finally {
      await tab.close();
    }
  }

  before(async () => {
    page = await servePage(ATTACK_PAGE);
    open = await startEngine();
    allowing = await startEngine({ allowedOrigins: [page.origin] });
    await withBankWorker(open);
    await withBankWorker(allowing);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    for (const p of pools) await p.closeAll();
    await open?.stop();
    await allowing?.stop();
    await page?.close();
  });

  test('a page of another origin is refused at the upgrade: it lists nothing and calls nothing', async () => {
    const before = writes.length;
    const sessions = open.engine.sessionCount;
    const outcome = await visit(open.url);
    assert.deepEqual(outcome, { opened: false, closeCode: 1006 });
    assert.equal(writes.length, before, 'bank::set was called');
    assert.equal(open.engine.sessionCount, sessions);
  });

  test('a page of an origin in engine.allowed_origins connects and calls', async () => {
    const outcome = await visit(allowing.url);
    assert.equal(outcome.opened, true);
    assert.ok(outcome.workers?.includes('bank-worker'), JSON.stringify(outcome));
    assert.deepEqual(outcome.setResult, { stored: true });
  });

  test('the refusal is an HTTP 403 naming the origin and the config key; without Origin the upgrade proceeds', async () => {
    const refused = await upgrade(open.port, '/', { origin: 'http://evil.example:8080' });
    assert.equal(refused.status, 403);
    const body = JSON.parse(refused.body) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'origin_not_allowed');
    assert.match(body.error.message, /http:\/\/evil\.example:8080/);
    assert.match(body.error.message, /engine\.allowed_origins/);
    // The telemetry path too, and the opaque origin of sandboxed frames and file:// pages.
    assert.equal((await upgrade(open.port, '/otel', { origin: 'http://evil.example' })).status, 403);
    assert.equal((await upgrade(open.port, '/', { origin: 'null' })).status, 403);
    // The pre-RFC 6455 header browsers once sent.
    assert.equal((await upgrade(open.port, '/', { 'sec-websocket-origin': 'http://evil.example' }, '8')).status, 403);
    // SDKs, the CLI and the console server send no Origin.
    assert.equal((await upgrade(open.port, '/', {})).status, 101);
    // An allowed origin matches however its scheme and host are cased.
    assert.equal((await upgrade(allowing.port, '/', { origin: page.origin.toUpperCase() })).status, 101);
  });

  test('engine.allowed_origins in config.yaml: origins only, normalised, refused with the key named otherwise', () => {
    const ok = parseConfig('config.yaml', 'engine:\n  allowed_origins: ["https://App.Example.com", "http://localhost:5173/"]\n');
    assert.deepEqual(ok.engine.allowedOrigins, ['https://app.example.com', 'http://localhost:5173']);
    assert.deepEqual(parseConfig('config.yaml', 'engine: {}\n').engine.allowedOrigins, []);
    for (const bad of ['"*"', '["*"]', '["null"]', '["https://a.example/path"]', '["ftp://a.example"]', '[""]', '[3]']) {
      assert.throws(
        () => parseConfig('config.yaml', `engine:\n  allowed_origins: ${bad}\n`),
        (e: Error) => /engine\.allowed_origins/.test(e.message),
        bad,
      );
    }
  });
});

/** A bare upgrade request; resolves with the status and body (101: the upgrade went through). */
function upgrade(port: number, path: string, headers: Record<string, string>, version = '13'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path,
      headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': version, 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', ...headers },
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: '' });
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
