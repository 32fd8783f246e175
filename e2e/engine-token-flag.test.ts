/**
 * `svc queue …`, `svc cron …` and `svc logs` take --token as `svc trigger` does (the same flag, the same
 * fallback to $SVC_TOKEN, the flag first): from another machine (here: another directory, where the
 * local engine's own token is not at hand) a user of an engine with auth on could call functions
 * with `svc trigger --token` but not list queues or schedules. Before, `--token` was a parse error
 * (exit 2) for all eight commands.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { EngineProcess, ROOT, runSvc, tempDir, until } from './helpers/cli.js';

const TOKEN = 'token-flag-admin-token-0123456789';
const WRONG = 'not-the-token-of-this-engine-0123';

describe('--token on svc queue and svc cron', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  /** Run from elsewhere with only SVC_URL (and no SVC_TOKEN unless given): a remote user's shell. */
  const away = (args: string[], env: Record<string, string> = {}) => runSvc(args, { env: { SVC_URL: engine.url, SVC_TOKEN: '', ...env } });

  before(async () => {
    writeFileSync(
      join(tmp.dir, 'config.yaml'),
      `engine:\n  host: 127.0.0.1\n  port: 0\n  auth:\n    tokens:\n      - name: admin\n        token: ${TOKEN}\n        admin: true\n` +
        'workers:\n  - name: svc-queue\n    builtin: svc-queue\n  - name: svc-cron\n    builtin: svc-cron\n',
    );
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir, timeoutMs: 30_000 });
    // The supervised built-ins connect after the engine is ready.
    const withEnv = { SVC_TOKEN: TOKEN };
    await until('svc-queue and svc-cron to serve', async () => (await away(['queue', 'list'], withEnv)).code === 0 && (await away(['cron', 'list'], withEnv)).code === 0, 30_000);
  });
  after(async () => {
    await engine?.stop('SIGTERM', 20_000);
    tmp.remove();
  });

  test('every svc queue and svc cron command, and svc logs, has the --token flag of svc trigger', async () => {
    const commands = join(ROOT, 'dist', 'src', 'cli', 'commands');
    const load = async (file: string) => ((await import(pathToFileURL(join(commands, file)).href)) as { default: { flags: Record<string, { summary?: string; type: string }> } }).default;
    const trigger = (await load('trigger.js')).flags.token!;
    const files = ['queue', 'cron'].flatMap((dir) => readdirSync(join(commands, dir)).filter((f) => f.endsWith('.js')).map((f) => join(dir, f)));
    assert.equal(files.length, 8);
    files.push('logs.js');
    for (const f of files) {
      const token = (await load(f)).flags.token;
      assert.ok(token, `${f} has no --token`);
      assert.equal(token.type, 'option', f);
      assert.equal(token.summary, trigger.summary, f);
    }
  });

  test('without a token the engine refuses; --token, or $SVC_TOKEN, lets svc queue and svc cron in', async () => {
    for (const cmd of [['queue', 'list'], ['cron', 'list'], ['logs', '-n', '1']]) {
      const refused = await away(cmd);
      assert.equal(refused.code, 1, `${cmd.join(' ')}: ${refused.stderr}`);
      assert.match(refused.stderr, /^error: unauthorized: /, cmd.join(' '));
      const flag = await away([...cmd, '--token', TOKEN, '--json']);
      assert.equal(flag.code, 0, `${cmd.join(' ')} --token: ${flag.stderr}`);
      if (cmd[0] !== 'logs') assert.ok(Array.isArray(cmd[0] === 'queue' ? (JSON.parse(flag.stdout) as { queues: unknown }).queues : JSON.parse(flag.stdout)), flag.stdout);
      else assert.ok(flag.stdout.trim().split('\n').every((l) => typeof (JSON.parse(l) as { message?: unknown }).message === 'string'), flag.stdout);
      const env = await away([...cmd, '--json'], { SVC_TOKEN: TOKEN });
      assert.equal(env.code, 0, `SVC_TOKEN ${cmd.join(' ')}: ${env.stderr}`);
    }
  });

  test('--token wins over $SVC_TOKEN, as for svc trigger', async () => {
    const flagRight = await away(['queue', 'list', '--token', TOKEN], { SVC_TOKEN: WRONG });
    assert.equal(flagRight.code, 0, flagRight.stderr);
    const flagWrong = await away(['cron', 'list', '--token', WRONG], { SVC_TOKEN: TOKEN });
    assert.equal(flagWrong.code, 1);
    assert.match(flagWrong.stderr, /^error: unauthorized: /);
    const trigger = await away(['trigger', 'engine::health::check', '--token', WRONG], { SVC_TOKEN: TOKEN });
    assert.equal(trigger.code, 1);
    assert.match(trigger.stderr, /^error: unauthorized: /);
  });

  test('the other commands reach svc-queue and svc-cron with --token', async () => {
    const runs: Array<[string[], number, RegExp]> = [
      [['queue', 'dlq', 'default'], 0, /^The DLQ of default is empty\./],
      [['queue', 'redrive', 'default'], 0, /^redriven 0 job\(s\) of default/],
      [['queue', 'purge', 'default'], 0, /^purged 0 job\(s\) of default/],
      // No such schedule: the answer is svc-cron's, past the engine's auth.
      [['cron', 'pause', '0123456789abcdef'], 1, /schedule_not_found/],
      [['cron', 'resume', '0123456789abcdef'], 1, /schedule_not_found/],
      [['cron', 'run', '0123456789abcdef'], 1, /schedule_not_found/],
    ];
    for (const [args, code, out] of runs) {
      const r = await away([...args, '--token', TOKEN]);
      assert.equal(r.code, code, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.match(code === 0 ? r.stdout : r.stderr, out, args.join(' '));
    }
  });
});
