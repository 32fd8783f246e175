import { Command, Flags } from '@oclif/core';
import { startConsoleServer } from '../../console-server/server.js';
import { redactAddress } from 'svc-sdk';
import { ADDRESS_DEFAULT, clientName, engineAddress, fail, formatError, localClientSecret } from '../client.js';

export default class Console extends Command {
  static override summary = 'Serve the web console (workers, functions, triggers, queues, logs, traces, state) on port 3113.';
  static override description = `Opens on the Workers page at http://127.0.0.1:3113/. The console talks to the engine at --address
(default: $SVC_URL, else the engine running for ./config.yaml, else ./config.yaml's engine.host:port
(port 0: the one .svc/engine.json recorded), else ws://localhost:49134) over one connection of its own, keeps retrying while
the engine is away, and shows that plainly. Pages update every second without reloading.
It binds 127.0.0.1 by default: anyone who can open it can call every function and edit state.
It answers only to IP addresses, localhost and --allowed-host names (DNS rebinding), only to its
own page (Origin), and only to API requests carrying the page's session token (docs/console.md).`;
  static override examples = ['svc console', 'svc console --port 8080', 'svc console --address ws://10.0.0.5:49134 --host 0.0.0.0 --allowed-host ops.example.com'];
  static override flags = {
    port: Flags.integer({ char: 'p', summary: 'Port of the web console (0 = any free port).', default: 3113, min: 0, max: 65535 }),
    host: Flags.string({ summary: 'Interface to listen on.', default: '127.0.0.1' }),
    address: Flags.string({ summary: `Engine address (${ADDRESS_DEFAULT}).` }),
    'http-url': Flags.string({ summary: 'Base URL of svc-http for test requests, when svc-http does not announce it.' }),
    'allowed-host': Flags.string({
      summary: 'A host name the console may be opened under, besides IP addresses, localhost and --host (repeatable).',
      multiple: true,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Console);
    let engineUrl: string;
    try {
      engineUrl = engineAddress(flags.address);
    } catch (e) {
      fail(formatError(e).replace(/^error: /, ''), 1);
    }
    let server;
    try {
      server = await startConsoleServer({
        engineUrl,
        // Read again at every connect: the engine may be restarted while the console runs.
        runSecret: () => localClientSecret(engineUrl, true),
        // The reserved svc-console name only for the local engine, which the secret proves it to.
        workerName: clientName('svc-console', localClientSecret(engineUrl, true) !== undefined),
        port: flags.port,
        host: flags.host,
        ...(flags['http-url'] ? { httpUrl: flags['http-url'] } : {}),
        allowedHosts: flags['allowed-host'] ?? [],
      });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (err.code === 'EADDRINUSE') fail(`listen_failed: cannot serve the console on ${flags.host}:${flags.port}: the port is already in use; choose another: svc console --port <n> (0: any free port)`, 1);
      fail(err.message, 1);
    }
    const shown = redactAddress(engineUrl);
    this.log(`svc console on ${server.url} (engine ${shown})`);
    // One line per change: every failed reconnect attempt also reports 'disconnected', which
    // printed "lost the engine" twice a second while it was away, or had never been reached.
    let connected = server.worker.state === 'connected';
    let toldAway = false;
    // Set on Ctrl-C / SIGTERM: closing its own connection is not the engine going away.
    let stopping = false;
    server.worker.on('connected', () => {
      connected = true;
      toldAway = false;
      this.log(`connected to the engine at ${shown}`);
    });
    server.worker.on('disconnected', () => {
      if (stopping) return;
      if (connected) this.log(`lost the engine at ${shown}; retrying until it is back`);
      else if (!toldAway) this.log(`cannot reach the engine at ${shown}; retrying until it answers (is \`svc --config config.yaml\` running? --address picks another)`);
      connected = false;
      toldAway = true;
    });
    if (connected) this.log(`connected to the engine at ${shown}`);
    await new Promise<void>((done) => {
      const stop = (): void => {
        stopping = true;
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        void server.close().then(done);
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
  }
}
