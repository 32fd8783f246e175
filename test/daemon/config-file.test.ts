/**
 * Defaults live in one place, DEFAULT_ENGINE_OPTIONS (src/engine/options.ts): the config.yaml that
 * `svc --config` creates, the quickstart template's config.yaml and docs/configuration.md's tables
 * all say the same values, and the stack's config files parse.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_INVOCATION_TIMEOUT_MS } from 'svc-sdk';
import { DEFAULT_CONFIG_YAML, parseConfig, workerEntriesOf } from '../../src/daemon/config-file.js';
import { ConfigFileError } from '../../src/engine/config/config-error.js';
import { ENGINE_KEYS, LIMIT_KEYS } from '../../src/engine/config/engine-config.js';
import { DEFAULT_ENGINE_OPTIONS, type EngineOptions } from '../../src/engine/options.js';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const read = (path: string): string => readFileSync(resolve(ROOT, path), 'utf8');

/** docs/configuration.md: the rows `| \`key\` | \`default\` | meaning |` of the table under `heading`. */
function documentedDefaults(heading: string): Map<string, string> {
  const doc = read('docs/configuration.md');
  const start = doc.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `docs/configuration.md has a section ${heading}`);
  const end = doc.indexOf('\n## ', start + 1);
  const rows = new Map<string, string>();
  for (const m of doc.slice(start, end < 0 ? undefined : end).matchAll(/^\| `([a-z_]+)` \| ([^|]+) \|/gm)) rows.set(m[1]!, m[2]!.trim());
  return rows;
}

/** A documented default (`8388608` (8 MiB), `true`, `[]`, `127.0.0.1`) as the value it names. */
function valueOf(cell: string): unknown {
  const m = /^`([^`]*)`/.exec(cell);
  if (!m) return undefined;
  try {
    return JSON.parse(m[1]!);
  } catch {
    return m[1];
  }
}

describe('defaults in one place', () => {
  test('the config.yaml svc creates says the engine defaults, and nothing else', () => {
    const cfg = parseConfig('config.yaml', DEFAULT_CONFIG_YAML);
    assert.deepEqual(cfg.engine, DEFAULT_ENGINE_OPTIONS);
    assert.deepEqual(cfg.workers, []);
    assert.match(DEFAULT_CONFIG_YAML, new RegExp(`invocation_timeout_ms: ${DEFAULT_ENGINE_OPTIONS.invocationTimeoutMs}\\n`));
  });

  test("the quickstart template's config.yaml agrees with the engine defaults", () => {
    const text = read('templates/quickstart/config.yaml').replaceAll('{{project_name}}', 'demo');
    const cfg = parseConfig('config.yaml', text);
    assert.deepEqual(cfg.engine, DEFAULT_ENGINE_OPTIONS);
    assert.deepEqual(cfg.workers, []);
  });

  test('the default deadline is the SDK protocol constant', () => {
    assert.equal(DEFAULT_ENGINE_OPTIONS.invocationTimeoutMs, DEFAULT_INVOCATION_TIMEOUT_MS);
  });

  for (const [heading, keys] of [
    ['`engine:`', Object.fromEntries(Object.entries(ENGINE_KEYS).map(([k, v]) => [k, v.field]))],
    ['`engine.limits:`', LIMIT_KEYS],
  ] as Array<[string, Readonly<Record<string, keyof EngineOptions>>]>) {
    test(`docs/configuration.md lists every key of ${heading} with its default`, () => {
      const rows = documentedDefaults(heading);
      for (const [key, field] of Object.entries(keys)) {
        assert.ok(rows.has(key), `${heading} ${key} is documented`);
        assert.deepEqual(valueOf(rows.get(key)!), DEFAULT_ENGINE_OPTIONS[field], `${heading} ${key}: documented default ${rows.get(key)}`);
      }
    });
  }
});

describe("the compose stack's engine configs", () => {
  const env = { SVC_ADMIN_TOKEN: 'a'.repeat(24), SVC_WORKER_TOKEN: 'w'.repeat(24), SVC_QUEUE_TOKEN: 'q'.repeat(24), SVC_CRON_TOKEN: 'c'.repeat(24), SVC_NODE_ID: 'engine-1', SVC_REDIS_PORT: '6379' };
  for (const file of ['compose-config/engine.yaml', 'compose-config/cluster-engine.yaml']) {
    test(`${file} parses, setting only what differs from the defaults`, () => {
      const cfg = parseConfig(file, read(file), env);
      assert.deepEqual(cfg.engine.tokens.map((t) => t.name), ['admin', 'workers', 'queue', 'cron']);
      assert.equal(cfg.engine.invocationTimeoutMs, DEFAULT_ENGINE_OPTIONS.invocationTimeoutMs);
      assert.deepEqual(workerEntriesOf(cfg), []);
    });
  }
});

test("a worker's token must be one of engine.auth.tokens", () => {
  const yaml = `engine:\n  auth:\n    tokens:\n      - name: ops\n        token: ${'x'.repeat(16)}\n        admin: true\nworkers:\n  - name: svc-state\n    builtin: svc-state\n    token: opz\n`;
  assert.throws(
    () => workerEntriesOf(parseConfig('/p/config.yaml', yaml)),
    (e: unknown) => e instanceof ConfigFileError && e.code === 'invalid_config' && e.message === '/p/config.yaml: workers: svc-state.token: no token named opz in engine.auth.tokens',
  );
  assert.equal(workerEntriesOf(parseConfig('/p/config.yaml', yaml.replace('opz', 'ops')))[0]!.token, 'ops');
});

describe('config.yaml deploy: (svc build, svc deploy kubernetes)', () => {
  test('deploy.registry is the image names\' prefix, ending in one /; none by default', () => {
    assert.equal(parseConfig('c.yaml', 'workers: []\n').deploy.registry, '');
    assert.equal(parseConfig('c.yaml', 'deploy:\n  registry: registry.example.com:5000/team\n').deploy.registry, 'registry.example.com:5000/team/');
    assert.equal(parseConfig('c.yaml', 'deploy:\n  registry: ghcr.io/acme/\n').deploy.registry, 'ghcr.io/acme/');
  });

  test('a bad registry, a mistyped key or a non-mapping is refused naming the key', () => {
    const refused = (yaml: string, re: RegExp): void => assert.throws(() => parseConfig('c.yaml', yaml), (e: unknown) => e instanceof ConfigFileError && e.code === 'invalid_config' && re.test(e.message));
    refused('deploy:\n  registry: Registry.Example.com\n', /^c\.yaml: deploy\.registry: "Registry\.Example\.com" is not a registry prefix \(host\[:port\]\[\/path\]/);
    refused('deploy:\n  registry: 5\n', /deploy\.registry: must be a string, got 5/);
    refused('deploy:\n  regsitry: x\n', /deploy\.regsitry: unknown key of deploy "regsitry" \(did you mean "registry"\?\)/);
    refused('deploy: [a]\n', /deploy: must be a mapping/);
  });
});

describe('a mistyped key anywhere in config.yaml (docs/configuration.md)', () => {
  // The doc promises one form for every level: the file, the key, the closest known key and all of
  // them. engine.metrics and engine.telemetry once said only `unknown key (known: …)`.
  const at = (path: string, typo: string, meant: string): [string, string, string] => [path, typo, meant];
  const levels: Array<[yaml: string, where: string, typo: string, meant: string]> = [
    ['engin: {}\n', ...at('engin', 'engin', 'engine')],
    ['engine:\n  prot: 1\n', ...at('engine.prot', 'prot', 'port')],
    ['engine:\n  limits:\n    max_conections: 1\n', ...at('engine.limits.max_conections', 'max_conections', 'max_connections')],
    ['engine:\n  auth:\n    tokns: []\n', ...at('engine.auth.tokns', 'tokns', 'tokens')],
    ['engine:\n  auth:\n    tokens:\n      - { name: a, token: aaaaaaaaaaaaaaaa, cal: [x] }\n', ...at('engine.auth.tokens[0].cal', 'cal', 'call')],
    ['engine:\n  metrics:\n    prot: 9464\n', ...at('engine.metrics.prot', 'prot', 'port')],
    ['engine:\n  telemetry:\n    endpiont: http://127.0.0.1:4318\n', ...at('engine.telemetry.endpiont', 'endpiont', 'endpoint')],
    ['engine:\n  cluster:\n    redis_url: redis://127.0.0.1:6379\n    lease: 3000\n', ...at('engine.cluster.lease', 'lease', 'lease_ms')],
    ['deploy:\n  regsitry: x\n', ...at('deploy.regsitry', 'regsitry', 'registry')],
  ];
  for (const [yaml, where, typo, meant] of levels) {
    test(where, () => {
      assert.throws(
        () => parseConfig('c.yaml', yaml, {}),
        (e: unknown) => {
          assert.ok(e instanceof ConfigFileError && e.code === 'invalid_config', String(e));
          const escaped = (s: string): string => s.replace(/[.[\]]/g, '\\$&');
          assert.match(e.message, new RegExp(`^c\\.yaml: ${escaped(where)}: unknown [a-z -]*"${typo}" \\(did you mean "${meant}"\\?\\); known keys: .*\\b${meant}\\b`));
          return true;
        },
      );
    });
  }
});
