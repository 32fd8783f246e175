import { randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { redactAddress, SvcError } from 'svc-sdk';
import type { Message } from 'svc-sdk/protocol';
import { engineErrors } from '../errors.js';
import type { Invocations } from '../invocations.js';
import { haltPeerCalls } from '../call-endings.js';
import type { LogEntry } from '../logs.js';
import type { Registry } from '../registry.js';
import type { Peer } from '../peer.js';
import type { Session } from '../session.js';
import type { Triggers } from '../triggers.js';
import { Backplane, type Lease } from './backplane.js';
import { RemotePeer } from './remote-peer.js';
import { CHANNEL_NODE_SEPARATOR, type ChannelRoute } from '../channel-proxy.js';
import { buildSnapshot, type NodeSnapshot } from './snapshot.js';

/** `engine.cluster` of config.yaml (docs/cluster.md). */
export interface ClusterOptions {
  redisUrl: string;
  /** Unique per engine; default `<hostname>-<6 random hex digits>`. */
  nodeId?: string;
  /** An engine whose lease is not renewed for this long is gone (renewed every third of it). */
  leaseMs: number;
  /** Hash tag of every Redis key and channel, so several clusters can share one Redis. */
  prefix: string;
  /**
   * Where the other engines reach this one (ws://host:port): they relay sockets of this engine's
   * channels to it (channel-proxy.ts). Default: the address it listens on (127.0.0.1 for 0.0.0.0).
   */
  advertiseUrl?: string;
}

export const DEFAULT_CLUSTER_LEASE_MS = 3000;
export const DEFAULT_CLUSTER_PREFIX = 'svc:cluster';
export const NODE_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

export function defaultNodeId(): string {
  const host = hostname().replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 48) || 'engine';
  return `${host}-${randomBytes(3).toString('hex')}`;
}

export interface ClusterDeps {
  registry: Registry;
  triggers: Triggers;
  invocations: Invocations;
  /** The router's entry for decoded, trusted frames. */
  deliver: (from: Peer, msg: Message) => void;
  sessions: () => Iterable<Session>;
  event: (level: LogEntry['level'], message: string, data?: Record<string, unknown>) => void;
  maxInvocationTimeoutMs: number;
}

/** Another engine as this one knows it. */
export interface ClusterNode {
  node: string;
  /** It, as a peer in this engine's registry and triggers table. */
  peer: RemotePeer;
  url: string;
  /** Version of the snapshot applied; -1 before the first. */
  version: number;
  snapshot: NodeSnapshot | null;
  joinedAt: number;
}

/** Cluster mode could not start: `cluster_unavailable`, `cluster_node_conflict` (docs/errors.md). */
export class ClusterError extends SvcError {
  constructor(code: 'cluster_unavailable' | 'cluster_node_conflict', message: string) {
    super(code, message);
    this.name = 'ClusterError';
  }
}

/**
 * Cluster mode: this engine's part in a group of engines sharing one Redis. It publishes what
 * its own workers provide (snapshot + lease), keeps every other engine as a RemotePeer in the
 * registry and the triggers table (so routing, deadlines, halting and trigger hand-over work as
 * for local peers), carries the frames between engines, and removes an engine whose lease lapsed.
 */
export class Cluster implements ChannelRoute {
  readonly nodeId: string;
  /** This engine process: a restart under the same node id is a new incarnation. */
  readonly incarnation = randomUUID();
  private readonly backplane: Backplane;
  /** The other engines, by node id. */
  readonly nodes = new Map<string, ClusterNode>();
  /** RemotePeer id → its engine, to recognise other engines among a function's providers in listings. */
  readonly byPeerId = new Map<string, ClusterNode>();
  /** Version of this engine's published snapshot. */
  private version = 0;
  private published = '';
  private url = '';
  private readonly startedAt = new Date().toISOString();
  private timer: NodeJS.Timeout | null = null;
  private publishTimer: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;
  private refreshAgain = false;
  private lastOk = Date.now();
  private withdrawn = false;
  private stopped = false;
  private offline = false;

  constructor(
    private readonly opts: ClusterOptions,
    private readonly deps: ClusterDeps,
  ) {
    this.nodeId = opts.nodeId ?? defaultNodeId();
    this.backplane = new Backplane(opts.redisUrl, opts.prefix, this.nodeId, this.incarnation, {
      frames: (from, incarnation, frames) => this.onFrames(from, incarnation, frames),
      undeliverable: (node, frames) => this.onUndeliverable(node, frames),
      // A failed read is retried by the next heartbeat.
      changed: () => void this.refresh().catch(() => undefined),
      error: (message) => this.deps.event('warn', `cluster: redis ${redactAddress(this.opts.redisUrl)}: ${message}`),
    });
    this.deps.registry.onChange(() => this.schedulePublish());
  }

  /** Joined and on the backplane: not before start() has joined, nor once it was lost for over a lease. */
  get ready(): boolean {
    return this.timer !== null && !this.offline && !this.stopped;
  }

  /** This engine's own address, as published. */
  get address(): string {
    return this.url;
  }

  get leaseMs(): number {
    return this.opts.leaseMs;
  }

  /**
   * The address of the live engine whose channel `channelId` is (channel ids name their engine:
   * channels.ts), or null: it is this engine's, or its engine is not (or no longer) in the cluster.
   */
  channelEngineUrl(channelId: string): string | null {
    const node = this.nodes.get(channelId.slice(0, Math.max(0, channelId.indexOf(CHANNEL_NODE_SEPARATOR))));
    return node && node.url && node.url !== this.url && node.peer.open ? node.url : null;
  }

  /** Join: connect, make sure the node id is free, publish, read the others. `listenHost`: engine.host as bound. */
  async start(url: string, listenHost?: string): Promise<void> {
    this.url = this.opts.advertiseUrl ?? url;
    try {
      await this.backplane.connect();
    } catch (e) {
      throw new ClusterError('cluster_unavailable', `engine.cluster.redis_url: ${(e as Error).message}`);
    }
    try {
      await this.claimNodeId();
      await this.backplane.subscribe();
      await this.publishNow();
      await this.refresh();
    } catch (e) {
      await this.backplane.close();
      throw e instanceof ClusterError ? e : new ClusterError('cluster_unavailable', `engine.cluster: ${(e as Error).message}`);
    }
    this.timer = setInterval(() => void this.tick(), Math.max(50, Math.floor(this.opts.leaseMs / 3)));
    this.timer.unref();
    this.deps.event('info', `cluster: joined as node ${this.nodeId} (${this.nodes.size} other engine(s)) via ${redactAddress(this.opts.redisUrl)}`);
    if (this.opts.advertiseUrl === undefined && (listenHost === '0.0.0.0' || listenHost === '::')) {
      // Then its channels are relayed to 127.0.0.1 by the other engines: themselves, or whatever listens there.
      this.deps.event('warn', `cluster: engine.cluster.advertise_url is not set and the engine listens on ${listenHost}: the other engines open its channels at ${this.url}, which reaches it only from its own machine; set advertise_url to an address they reach (docs/cluster.md)`);
    }
  }

  /**
   * A lease under our node id from another process: a previous run killed moments ago (it lapses
   * within leaseMs) or a second engine configured with the same id (it keeps being renewed).
   */
  private async claimNodeId(): Promise<void> {
    const first = await this.backplane.currentLease(this.nodeId);
    if (!first || first.inc === this.incarnation) return;
    const end = Date.now() + this.opts.leaseMs + 500;
    while (Date.now() < end) {
      await new Promise((r) => setTimeout(r, 100));
      const now = await this.backplane.currentLease(this.nodeId);
      if (!now) return;
    }
    throw new ClusterError(
      'cluster_node_conflict',
      `engine.cluster.node_id: node id "${this.nodeId}" is in use by another running engine (its lease keeps being renewed); give each engine its own node_id`,
    );
  }

  /** Stop offering functions (shutdown begins): the others route elsewhere while calls in flight finish. */
  async withdraw(): Promise<void> {
    if (this.withdrawn || this.stopped) return;
    this.withdrawn = true;
    await within(1000, this.publishNow()).catch(() => undefined);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.publishTimer) clearTimeout(this.publishTimer);
    await within(2000, this.backplane.leave()).catch(() => undefined);
    for (const node of [...this.nodes.keys()]) this.drop(node, 'this engine stopped');
  }

  // ---- publishing --------------------------------------------------------------------------------

  private lease(): Lease {
    return { inc: this.incarnation, ver: this.version, url: this.url };
  }

  private snapshotBody(): string {
    return JSON.stringify(
      buildSnapshot({ node: this.nodeId, inc: this.incarnation, url: this.url, started_at: this.startedAt }, this.deps.registry, this.deps.triggers, this.deps.sessions(), this.withdrawn),
    );
  }

  private schedulePublish(): void {
    if (this.publishTimer || this.stopped || !this.url) return;
    // Registrations come in bursts (a worker replays all of its functions): publish once per burst.
    this.publishTimer = setTimeout(() => {
      this.publishTimer = null;
      void this.publishNow().catch(() => undefined);
    }, 10);
  }

  private async publishNow(): Promise<void> {
    const body = this.snapshotBody();
    if (body === this.published) return;
    this.version++;
    const snap = JSON.stringify({ ...(JSON.parse(body) as object), ver: this.version });
    await this.backplane.publish(this.lease(), snap, this.opts.leaseMs);
    this.published = body;
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    try {
      // A Redis that accepts the connection but does not answer must not stall the heartbeat.
      if (this.snapshotBody() !== this.published) await within(this.opts.leaseMs, this.publishNow());
      else await within(this.opts.leaseMs, this.backplane.heartbeat(this.lease(), this.opts.leaseMs));
      await within(this.opts.leaseMs, this.refresh());
      this.lastOk = Date.now();
      if (this.offline) {
        this.offline = false;
        this.deps.event('info', `cluster: backplane ${redactAddress(this.opts.redisUrl)} reachable again`);
      }
    } catch (e) {
      // Without the backplane this engine cannot reach the others, and they already count it as
      // gone once its lease lapses: do the same on this side, so calls fail fast instead of hanging.
      if (!this.offline && Date.now() - this.lastOk > this.opts.leaseMs) {
        this.offline = true;
        this.deps.event('error', `cluster: lost the backplane ${redactAddress(this.opts.redisUrl)} for over ${this.opts.leaseMs} ms (${(e as Error).message}); serving local workers only`);
        for (const node of [...this.nodes.keys()]) this.drop(node, 'unreachable: this engine lost the backplane');
      }
    }
  }

  // ---- the view of the other engines -------------------------------------------------------------

  /** Re-read leases and changed snapshots. Calls during a refresh coalesce into one more. */
  refresh(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      try {
        do {
          this.refreshAgain = false;
          await this.readView();
        } while (this.refreshAgain && !this.stopped);
      } finally {
        this.refreshing = null;
      }
    })();
    return this.refreshing;
  }

  private async readView(): Promise<void> {
    if (this.stopped) return;
    const leases = await this.backplane.leases();
    for (const [id, node] of [...this.nodes]) {
      const l = leases.get(id);
      if (!l) this.drop(id, 'left the cluster (lease expired or released)');
      else if (l.inc !== node.peer.incarnation) this.drop(id, 'restarted');
    }
    const need: string[] = [];
    for (const [id, l] of leases) {
      if (id === this.nodeId) continue;
      const known = this.nodes.get(id);
      if (!known || known.version !== l.ver) need.push(id);
    }
    const texts = await this.backplane.snapshots(need);
    need.forEach((id, i) => {
      const text = texts[i];
      const lease = leases.get(id)!;
      if (!text) return;
      let snap: NodeSnapshot;
      try {
        snap = JSON.parse(text) as NodeSnapshot;
      } catch {
        return;
      }
      if (snap.inc !== lease.inc) return; // a restart raced this read; the next one sorts it out
      const node = this.nodeFor(id, snap.inc, snap.url);
      if (!node || snap.ver <= node.version) return;
      this.apply(node, snap);
    });
  }

  /** The engine `id` as known here, made when it is new (or restarted as `incarnation`). */
  private nodeFor(id: string, incarnation: string, url = ''): ClusterNode | undefined {
    if (id === this.nodeId || this.stopped) return undefined;
    let node = this.nodes.get(id);
    if (node && node.peer.incarnation !== incarnation) {
      this.drop(id, 'restarted');
      node = undefined;
    }
    if (!node) {
      const peer = new RemotePeer(id, incarnation, (to, frame) => this.backplane.send(to, frame));
      node = { node: id, peer, url, version: -1, snapshot: null, joinedAt: Date.now() };
      this.nodes.set(id, node);
      this.byPeerId.set(peer.id, node);
      this.deps.event('info', `cluster: engine ${id} joined${url ? ` (${url})` : ''}`);
    }
    if (url) node.url = url;
    return node;
  }

  /** Make the registry and the triggers table match what that engine now provides. */
  private apply(node: ClusterNode, snap: NodeSnapshot): void {
    const { registry, triggers } = this.deps;
    const peer = node.peer;
    node.version = snap.ver;
    node.snapshot = snap;
    const fnIds = new Set(snap.functions.map((f) => f.id));
    for (const id of [...peer.functions]) if (!fnIds.has(id)) registry.remove(peer, id);
    for (const f of snap.functions) {
      if (peer.functions.has(f.id)) continue;
      const { workers: _w, ...desc } = f;
      registry.add(peer, { type: 'registerfunction', ...desc });
    }
    const typeIds = new Set(snap.trigger_types.map((t) => t.id));
    for (const id of [...peer.triggerTypes]) if (!typeIds.has(id)) this.withdrawType(peer, id);
    // Registered again when known too: what a type asks of its binders may have changed.
    for (const t of snap.trigger_types) triggers.registerType(peer, { type: 'registertriggertype', ...t });
  }

  /** That engine no longer provides a trigger type: take our bindings back from it, hand them on. */
  private withdrawType(peer: RemotePeer, id: string): void {
    for (const b of this.deps.triggers.listBindings()) {
      const holders = b.providers as Array<{ worker_id: string }>;
      if (b.trigger_type === id && holders.some((h) => h.worker_id === peer.id)) peer.send({ type: 'unregistertrigger', id: b.id as string, trigger_type: id });
    }
    this.deps.triggers.unregisterType(peer, id);
  }

  /** An engine is gone: exactly what happens when a connection closes, for everything it stood for. */
  private drop(id: string, why: string): void {
    const node = this.nodes.get(id);
    if (!node) return;
    this.nodes.delete(id);
    this.byPeerId.delete(node.peer.id);
    const peer = node.peer;
    peer.closed = true;
    haltPeerCalls(this.deps.invocations, peer, `engine ${id} ${why}`);
    this.deps.registry.removeAll(peer);
    this.deps.triggers.removePeer(peer);
    if (!this.stopped) this.deps.event('warn', `cluster: engine ${id} ${why}`);
  }

  // ---- frames between engines ------------------------------------------------------------------

  private onFrames(from: string, incarnation: string, frames: Message[]): void {
    const node = this.nodeFor(from, incarnation);
    if (!node) return;
    node.peer.suspectUntil = 0;
    for (const m of frames) {
      // The deadline was set by the calling engine's limits; ours may be tighter.
      if (m.type === 'invokefunction' && typeof m.timeout_ms === 'number' && m.timeout_ms > this.deps.maxInvocationTimeoutMs) {
        this.deps.deliver(node.peer, { ...m, timeout_ms: this.deps.maxInvocationTimeoutMs });
      } else {
        this.deps.deliver(node.peer, m);
      }
    }
  }

  /**
   * Nobody subscribes to that engine's channel: it is gone. Calls sent there end now, not at their
   * deadline: each is answered as its callee's engine would answer a callee that left.
   */
  private onUndeliverable(id: string, frames: string[]): void {
    const node = this.nodes.get(id);
    if (!node) return;
    node.peer.suspectUntil = Date.now() + this.opts.leaseMs;
    void this.refresh().catch(() => undefined);
    for (const text of frames) {
      // Every frame here was written by this engine (so it parses); only calls need an answer.
      if (!text.startsWith('{"type":"invokefunction"')) continue;
      const m = JSON.parse(text) as Message;
      if (m.type !== 'invokefunction' || !m.invocation_id) continue;
      this.deps.deliver(node.peer, {
        type: 'invocationresult',
        invocation_id: m.invocation_id,
        function_id: m.function_id,
        error: engineErrors.invocationStopped(m.function_id, `engine ${id} is not reachable`),
      });
    }
  }
}

function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new SvcError('cluster_unavailable', `no answer from Redis within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
