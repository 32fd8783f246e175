import type { RedisClientType } from 'redis';
import { redactAddress, SvcError } from 'svc-sdk';
import type { Message } from 'svc-sdk/protocol';

/**
 * The Redis side of cluster mode: one lease key per engine, one published registry snapshot per
 * engine, a change channel, and one inbound channel per engine carrying forwarded frames. Nothing
 * here knows about functions or calls; cluster.ts gives the bytes their meaning.
 *
 * Every key and channel carries the hash tag `{<prefix>}`, so in a Redis Cluster they all live in
 * one slot: MGET over the leases and MULTI over a lease and its snapshot stay single-slot.
 */

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
type Client = RedisClientType<{}, {}, {}, 3, {}>;

export interface Lease {
  /** Random per engine process: a restart under the same node id is a new incarnation. */
  inc: string;
  /** Version of the published snapshot; changes whenever the snapshot does. */
  ver: number;
  url: string;
}

/**
 * One batch of frames from one engine to another (one PUBLISH), as JSON: `{"from": <node id>,
 * "inc": <its incarnation>, "frames": [<frame>, …]}`. Frames are queued as the JSON text each peer
 * gets (Peer.sendText) and written into the array as they are, so nothing is serialised twice.
 */
interface Envelope {
  from: string;
  inc: string;
  frames: Message[];
}

export interface BackplaneHandlers {
  /** Frames another engine (node id `from`, incarnation `incarnation`) sent to this one, in order. */
  frames(from: string, incarnation: string, frames: Message[]): void;
  /** Frames (JSON text) that reached no subscriber: the target engine is gone (or not yet subscribed). */
  undeliverable(node: string, frames: string[]): void;
  /** Some engine published a change (or left): re-read the view now rather than at the next tick. */
  changed(): void;
  error(message: string): void;
}

export class Backplane {
  private cmd: Client | null = null;
  private sub: Client | null = null;
  /** Frames (JSON text) queued per engine during this event-loop turn. */
  private readonly outbox = new Map<string, string[]>();
  private flushScheduled = false;
  private lastError = '';

  /** What every envelope from this engine begins with. */
  private readonly envelopeHead: string;

  constructor(
    private readonly url: string,
    private readonly prefix: string,
    readonly node: string,
    /** This engine's incarnation (the `inc` of its lease and envelopes). */
    readonly incarnation: string,
    private readonly handlers: BackplaneHandlers,
  ) {
    this.envelopeHead = '{"from":' + JSON.stringify(node) + ',"inc":' + JSON.stringify(incarnation) + ',"frames":[';
  }

  private key(...parts: string[]): string {
    return `{${this.prefix}}:${parts.join(':')}`;
  }
  private get nodesKey(): string {
    return this.key('nodes');
  }
  leaseKey(node: string): string {
    return this.key('lease', node);
  }
  snapshotKey(node: string): string {
    return this.key('registry', node);
  }
  private inbox(node: string): string {
    return this.key('in', node);
  }
  private get eventsChannel(): string {
    return this.key('events');
  }

  private client(): Client {
    if (!this.cmd) throw new SvcError('cluster_unavailable', 'The backplane is closed: this engine has left the cluster or has not joined it yet');
    return this.cmd;
  }

  async connect(): Promise<void> {
    // No offline queue: while Redis is unreachable a forwarded call fails at once
    // (invocation_stopped) and a heartbeat fails, instead of both waiting for a reconnect.
    // At start, a Redis that cannot be reached fails the engine's start after a few tries; once
    // connected, node-redis retries forever (the heartbeat reports the outage meanwhile).
    let connected = false;
    const reconnectStrategy = (retries: number, cause: Error): number | Error =>
      !connected && retries >= 3 ? cause : Math.min(100 * (retries + 1), 1000);
    // Loaded here, not at the top: only an engine in a cluster needs the Redis client, and loading
    // it costs every engine start ~0.15 s of CPU (the tests start hundreds).
    const { createClient } = await import('redis');
    const cmd = createClient({ url: this.url, disableOfflineQueue: true, socket: { reconnectStrategy, connectTimeout: 5000 } }) as unknown as Client;
    cmd.on('error', (e: Error) => this.reportError(e));
    const sub = cmd.duplicate();
    sub.on('error', (e: Error) => this.reportError(e));
    try {
      await cmd.connect();
      await sub.connect();
      connected = true;
    } catch (e) {
      await Promise.allSettled([cmd.destroy(), sub.destroy()]);
      throw new SvcError('cluster_unavailable', `cannot connect to ${redactAddress(this.url)}: ${(e as Error).message || this.lastError}`);
    }
    this.cmd = cmd;
    this.sub = sub;
  }

  /** Start receiving: frames for this engine and change notices of every engine. */
  async subscribe(): Promise<void> {
    const sub = this.sub!;
    await sub.subscribe(this.inbox(this.node), (text) => this.receive(text));
    await sub.subscribe(this.eventsChannel, (text) => {
      if (text !== this.node) this.handlers.changed();
    });
  }

  private reportError(e: Error): void {
    // node-redis reconnects by itself; report each distinct failure once, not every retry.
    if (e.message === this.lastError) return;
    this.lastError = e.message;
    this.handlers.error(e.message);
  }

  private receive(text: string): void {
    let env: Envelope;
    try {
      env = JSON.parse(text) as Envelope;
    } catch {
      this.handlers.error(`ignored a backplane message that is not JSON: ${text.slice(0, 100)}`);
      return;
    }
    if (typeof env.from !== 'string' || !Array.isArray(env.frames)) return;
    this.handlers.frames(env.from, env.inc, env.frames);
  }

  /** The lease of another engine holding this node id, if any. */
  async currentLease(node: string): Promise<Lease | null> {
    const v = await this.client().get(this.leaseKey(node));
    return parseLease(v);
  }

  /** Renew (or take) this engine's lease, and keep its snapshot alive as long. */
  async heartbeat(lease: Lease, leaseMs: number): Promise<void> {
    await this.client().multi()
      .set(this.leaseKey(this.node), JSON.stringify(lease), { expiration: { type: 'PX', value: leaseMs } })
      .pExpire(this.snapshotKey(this.node), leaseMs)
      .sAdd(this.nodesKey, this.node)
      .exec();
  }

  /** Publish a new snapshot together with the lease naming its version, then tell the others. */
  async publish(lease: Lease, snapshot: string, leaseMs: number): Promise<void> {
    await this.client().multi()
      .set(this.snapshotKey(this.node), snapshot, { expiration: { type: 'PX', value: leaseMs } })
      .set(this.leaseKey(this.node), JSON.stringify(lease), { expiration: { type: 'PX', value: leaseMs } })
      .sAdd(this.nodesKey, this.node)
      .publish(this.eventsChannel, this.node)
      .exec();
  }

  /** Every engine with a live lease (this one included), and forget those whose lease is gone. */
  async leases(): Promise<Map<string, Lease>> {
    const cmd = this.client();
    const nodes = await cmd.sMembers(this.nodesKey);
    const out = new Map<string, Lease>();
    if (nodes.length === 0) return out;
    const values = await cmd.mGet(nodes.map((n) => this.leaseKey(n)));
    const dead: string[] = [];
    nodes.forEach((n, i) => {
      const lease = parseLease(values[i]);
      if (lease) out.set(n, lease);
      else dead.push(n);
    });
    if (dead.length > 0) await cmd.sRem(this.nodesKey, dead);
    return out;
  }

  async snapshots(nodes: string[]): Promise<Array<string | null>> {
    if (nodes.length === 0) return [];
    return (await this.client().mGet(nodes.map((n) => this.snapshotKey(n)))) as Array<string | null>;
  }

  /** Queue a frame (JSON text) for another engine. Frames of one event-loop turn leave in one PUBLISH per engine. */
  send(node: string, frame: string): void {
    let q = this.outbox.get(node);
    if (!q) {
      q = [];
      this.outbox.set(node, q);
    }
    q.push(frame);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    const cmd = this.cmd;
    for (const [node, frames] of this.outbox) {
      if (!cmd) {
        this.handlers.undeliverable(node, frames);
        continue;
      }
      cmd.publish(this.inbox(node), this.envelopeHead + frames.join(',') + ']}').then(
        (receivers) => {
          if (receivers === 0) this.handlers.undeliverable(node, frames);
        },
        (e: Error) => {
          this.reportError(e);
          this.handlers.undeliverable(node, frames);
        },
      );
    }
    this.outbox.clear();
  }

  /** Leave: drop the lease and snapshot now, so the others see this engine gone at once. */
  async leave(): Promise<void> {
    const cmd = this.cmd;
    if (this.flushScheduled) this.flush();
    if (cmd) {
      await cmd
        .multi()
        .del([this.leaseKey(this.node), this.snapshotKey(this.node)])
        .sRem(this.nodesKey, this.node)
        .publish(this.eventsChannel, this.node)
        .exec()
        .catch(() => undefined);
    }
    await this.close();
  }

  async close(): Promise<void> {
    const clients = [this.sub, this.cmd].filter((c): c is Client => c !== null);
    this.sub = null;
    this.cmd = null;
    await Promise.allSettled(clients.map((c) => c.close()));
    await Promise.allSettled(clients.map((c) => c.destroy()));
  }
}

function parseLease(v: unknown): Lease | null {
  if (typeof v !== 'string') return null;
  try {
    const l = JSON.parse(v) as Lease;
    return typeof l.inc === 'string' && typeof l.ver === 'number' ? l : null;
  } catch {
    return null;
  }
}
