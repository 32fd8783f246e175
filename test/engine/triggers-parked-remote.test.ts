import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Call } from '../../src/engine/call.js';
import { RemotePeer } from '../../src/engine/cluster/remote-peer.js';
import { Peer } from '../../src/engine/peer.js';
import { Triggers } from '../../src/engine/triggers.js';

/**
 * The cluster race where another engine takes a binding while it has no provider of the type any
 * more (its snapshot had not said so yet) and answers `parked`. The table is driven directly: the
 * race depends on when two engines' snapshots cross, which a test of real engines cannot time.
 */

/** A connection to this engine that records what it is sent. */
class RecordingPeer extends Peer {
  readonly node = undefined;
  readonly sent: Array<Record<string, unknown>> = [];
  constructor(name: string) {
    super(name);
    this.features.add('ack');
  }
  get open(): boolean {
    return !this.closed;
  }
  sendText(text: string): void {
    this.sent.push(JSON.parse(text) as Record<string, unknown>);
  }
  sendCall(_call: Call, frame: string): void {
    this.sendText(frame);
  }
}

function setup() {
  const toB: Array<Record<string, unknown>> = [];
  const engineB = new RemotePeer('B', 'b-1', (_node, frame) => toB.push(JSON.parse(frame) as Record<string, unknown>));
  const owner = new RecordingPeer('binder');
  const warnings: string[] = [];
  const triggers = new Triggers((m) => warnings.push(m));
  triggers.registerType(engineB, { type: 'registertriggertype', id: 'tick', description: 'a remote type' });
  triggers.register(owner, { type: 'registertrigger', id: 't1', trigger_type: 'tick', function_id: 'job::run', config: {} });
  assert.deepEqual(toB.map((f) => f.type), ['registertrigger'], 'the binding is handed to engine B');
  const status = () => triggers.listBindings().find((b) => b.id === 't1')?.status;
  return { toB, engineB, owner, triggers, status, warnings };
}

describe('a binding another engine parks', () => {
  test('stays parked here and is acknowledged as parked, then active once that engine\'s provider accepts', () => {
    const { engineB, owner, triggers, status } = setup();
    triggers.result(engineB, { type: 'triggerregistrationresult', id: 't1', trigger_type: 'tick', function_id: 'job::run', status: 'parked' });
    assert.equal(status(), 'parked');
    assert.deepEqual(owner.sent.map((f) => f.status), ['parked']);
    // The same answer again (a replay) says nothing new.
    triggers.result(engineB, { type: 'triggerregistrationresult', id: 't1', trigger_type: 'tick', function_id: 'job::run', status: 'parked' });
    assert.deepEqual(owner.sent.map((f) => f.status), ['parked']);
    triggers.result(engineB, { type: 'triggerregistrationresult', id: 't1', trigger_type: 'tick', function_id: 'job::run', status: 'active' });
    assert.equal(status(), 'active');
    assert.deepEqual(owner.sent.map((f) => f.status), ['parked', 'active']);
  });

  test('moves to a provider on this engine that registers meanwhile (one mode)', () => {
    const { toB, engineB, triggers, status } = setup();
    triggers.result(engineB, { type: 'triggerregistrationresult', id: 't1', trigger_type: 'tick', function_id: 'job::run', status: 'parked' });
    const local = new RecordingPeer('local-provider');
    triggers.registerType(local, { type: 'registertriggertype', id: 'tick' });
    assert.deepEqual(toB.map((f) => f.type), ['registertrigger', 'unregistertrigger'], 'taken back from engine B');
    assert.deepEqual(local.sent.map((f) => [f.type, f.id]), [['registertrigger', 't1']]);
    assert.equal(status(), 'pending');
    triggers.result(local, { type: 'triggerregistrationresult', id: 't1', trigger_type: 'tick', function_id: 'job::run' });
    assert.equal(status(), 'active');
  });

  test('an active binding stays with engine B when a provider registers here (one mode)', () => {
    const { toB, engineB, triggers, status } = setup();
    triggers.result(engineB, { type: 'triggerregistrationresult', id: 't1', trigger_type: 'tick', function_id: 'job::run', status: 'active' });
    const local = new RecordingPeer('local-provider');
    triggers.registerType(local, { type: 'registertriggertype', id: 'tick' });
    assert.deepEqual(toB.map((f) => f.type), ['registertrigger']);
    assert.deepEqual(local.sent, []);
    assert.equal(status(), 'active');
  });
});

describe('a parked answer that is not the whole story', () => {
  test('a provider that registered here before engine B answered parked takes the binding (one mode)', () => {
    const { toB, engineB, triggers, status } = setup();
    const local = new RecordingPeer('local-provider');
    triggers.registerType(local, { type: 'registertriggertype', id: 'tick' });
    assert.equal(local.sent.length, 0, 'a pending binding stays with engine B');
    triggers.result(engineB, { type: 'triggerregistrationresult', id: 't1', trigger_type: 'tick', function_id: 'job::run', status: 'parked' });
    assert.deepEqual(toB.map((f) => f.type), ['registertrigger', 'unregistertrigger'], 'taken back from engine B');
    assert.deepEqual(local.sent.map((f) => [f.type, f.id]), [['registertrigger', 't1']]);
    assert.equal(status(), 'pending');
  });

  test('in all mode one engine parking it does not park a binding its other holders serve', () => {
    const toB: Array<Record<string, unknown>> = [];
    const engineB = new RemotePeer('B', 'b-1', (_node, frame) => toB.push(JSON.parse(frame) as Record<string, unknown>));
    const local = new RecordingPeer('local-provider');
    const owner = new RecordingPeer('binder');
    const triggers = new Triggers(() => undefined);
    triggers.registerType(local, { type: 'registertriggertype', id: 'route', binding_mode: 'all' });
    triggers.registerType(engineB, { type: 'registertriggertype', id: 'route', binding_mode: 'all' });
    triggers.register(owner, { type: 'registertrigger', id: 'r1', trigger_type: 'route', function_id: 'api::get', config: {} });
    const listed = () => triggers.listBindings().find((b) => b.id === 'r1');
    assert.equal((listed()?.providers as unknown[]).length, 2, 'held here and at engine B');
    triggers.result(engineB, { type: 'triggerregistrationresult', id: 'r1', trigger_type: 'route', function_id: 'api::get', status: 'parked' });
    assert.equal(listed()?.status, 'pending', 'the local provider has it (an iii provider never says so)');
    assert.equal(owner.sent.length, 0, 'the binder is not told parked');
    triggers.result(local, { type: 'triggerregistrationresult', id: 'r1', trigger_type: 'route', function_id: 'api::get' });
    assert.equal(listed()?.status, 'active');
    assert.deepEqual(owner.sent.map((f) => f.status), ['active']);
  });

  test('in all mode a provider that registers here while engine B has it parked makes it pending, not parked', () => {
    const toB: Array<Record<string, unknown>> = [];
    const engineB = new RemotePeer('B', 'b-1', (_node, frame) => toB.push(JSON.parse(frame) as Record<string, unknown>));
    const owner = new RecordingPeer('binder');
    const triggers = new Triggers(() => undefined);
    triggers.registerType(engineB, { type: 'registertriggertype', id: 'route', binding_mode: 'all' });
    triggers.register(owner, { type: 'registertrigger', id: 'r1', trigger_type: 'route', function_id: 'api::get', config: {} });
    triggers.result(engineB, { type: 'triggerregistrationresult', id: 'r1', trigger_type: 'route', function_id: 'api::get', status: 'parked' });
    const listed = () => triggers.listBindings().find((b) => b.id === 'r1');
    assert.equal(listed()?.status, 'parked');
    const local = new RecordingPeer('local-provider');
    triggers.registerType(local, { type: 'registertriggertype', id: 'route', binding_mode: 'all' });
    assert.deepEqual(local.sent.map((f) => [f.type, f.id]), [['registertrigger', 'r1']]);
    assert.equal(listed()?.status, 'pending', 'handed to a provider here (an iii provider never says it accepted)');
  });
});
