import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RouteTable, TriggerConfigError, parseHttpTriggerConfig } from '../../../src/workers/http/route-table.js';

const bind = (id: string, fn: string, api_path: unknown, http_method: unknown = 'GET') => ({ id, function_id: fn, config: { api_path, http_method } });

test('config: method is case-insensitive and stored uppercase; trailing slash is dropped', () => {
  assert.deepEqual(parseHttpTriggerConfig({ api_path: '/users/:id/', http_method: 'post' }), { apiPath: '/users/:id', method: 'POST', stream: false });
  assert.deepEqual(parseHttpTriggerConfig({ api_path: '/', http_method: 'Get' }), { apiPath: '/', method: 'GET', stream: false });
  // iii clients omit the leading slash (`_console/status`); it is added.
  assert.deepEqual(parseHttpTriggerConfig({ api_path: 'users/:id', http_method: 'GET' }), { apiPath: '/users/:id', method: 'GET', stream: false });
  assert.deepEqual(parseHttpTriggerConfig({ api_path: '/sse', http_method: 'GET', stream: true }), { apiPath: '/sse', method: 'GET', stream: true });
});

test('config: bad configs are refused with invalid_trigger_config naming the input', () => {
  const cases: Array<[unknown, RegExp]> = [
    [null, /must be an object/],
    ['GET /x', /must be an object/],
    [{ api_path: '', http_method: 'GET' }, /api_path must be a non-empty string such as "\/users\/:id", got ""/],
    [{ api_path: 42, http_method: 'GET' }, /api_path must be a non-empty string .* got number 42/],
    [{ http_method: 'GET' }, /api_path .* got nothing/],
    [{ api_path: '/x', http_method: 'FETCH' }, /http_method must be one of GET, .* got "FETCH"/],
    [{ api_path: '/x', http_method: 'CONNECT' }, /http_method must be one of/],
    [{ api_path: '/x?y=1', http_method: 'GET' }, /must not contain "\?"/],
    [{ api_path: '/a/(x)', http_method: 'GET' }, /"\/a\/\(x\)" is not a valid route pattern/],
    [{ api_path: '/a/:', http_method: 'GET' }, /not a valid route pattern: Missing parameter name/],
    [{ api_path: '/a', http_method: 'GET', stream: 'yes' }, /stream must be true or false, got "yes"/],
    // A lone surrogate cannot be percent-encoded: encodeURIComponent's bare "URI malformed" escaped.
    [{ api_path: '/a/\ud800', http_method: 'GET' }, /api_path "\/a\/\\ud800" is not valid Unicode \(it holds a lone surrogate\)/],
  ];
  const table = new RouteTable();
  for (const [config, re] of cases) {
    assert.throws(
      () => table.add({ id: 't', function_id: 'f', config }),
      (e: unknown) => e instanceof TriggerConfigError && e.code === 'invalid_trigger_config' && re.test(e.message),
      `config ${JSON.stringify(config)}`,
    );
  }
  assert.equal(table.size, 0);
});

test('static and parameter routes match; params are decoded; HEAD falls back to GET', () => {
  const t = new RouteTable();
  t.add(bind('1', 'users::me', '/users/me'));
  t.add(bind('2', 'users::get', '/users/:id'));
  t.add(bind('3', 'posts::get', '/users/:id/posts/:post'));
  t.add(bind('4', 'files::get', '/files/*rest'));
  t.add(bind('5', 'users::create', '/users', 'POST'));

  assert.equal(t.match('GET', '/users/me')?.route.functionId, 'users::me');
  const m = t.match('GET', '/users/a%20b');
  assert.equal(m?.route.functionId, 'users::get');
  assert.deepEqual(m?.params, { id: 'a b' });
  assert.deepEqual(t.match('GET', '/users/7/posts/9')?.params, { id: '7', post: '9' });
  assert.deepEqual(t.match('GET', '/files/a/b/c.txt')?.params, { rest: 'a/b/c.txt' });
  assert.equal(t.match('GET', '/users/7/')?.route.functionId, 'users::get', 'trailing slash ignored');
  assert.equal(t.match('HEAD', '/users/7')?.route.functionId, 'users::get');
  assert.equal(t.match('POST', '/users')?.route.functionId, 'users::create');
  assert.equal(t.match('GET', '/users'), null);
  assert.equal(t.match('GET', '/Users/me'), null, 'paths are case-sensitive');
  assert.equal(t.match('DELETE', '/users/7'), null);
  assert.deepEqual(t.allowedMethods('/users').sort(), ['POST']);
  assert.deepEqual(t.allowedMethods('/users/7').sort(), ['GET', 'HEAD']);
  assert.deepEqual(t.allowedMethods('/nothing'), []);
  assert.throws(() => t.match('GET', '/users/%E0%A4%A'), URIError);
});

test('more specific routes win regardless of registration order', () => {
  const t = new RouteTable();
  t.add(bind('a', 'any', '/:section/:id'));
  t.add(bind('b', 'wild', '/docs/*rest'));
  t.add(bind('c', 'param', '/docs/:id'));
  t.add(bind('d', 'static', '/docs/index'));
  assert.equal(t.match('GET', '/docs/index')?.route.functionId, 'static');
  assert.equal(t.match('GET', '/docs/7')?.route.functionId, 'param');
  assert.equal(t.match('GET', '/docs/7/8')?.route.functionId, 'wild');
  assert.equal(t.match('GET', '/blog/7')?.route.functionId, 'any');
});

test('a second binding of the same method and pattern is refused, naming the bound function', () => {
  const t = new RouteTable();
  t.add(bind('t1', 'users::get', '/users/:id'));
  assert.throws(
    () => t.add(bind('t2', 'other::fn', '/users/:name', 'get')),
    (e: unknown) =>
      e instanceof TriggerConfigError &&
      e.code === 'route_conflict' &&
      /GET \/users\/:name \(same as \/users\/:id\) is already bound to function users::get \(trigger t1\)/.test(e.message),
  );
  assert.throws(() => t.add(bind('t3', 'other::fn', '/users/:id/')), /GET \/users\/:id is already bound to function users::get/);
  // Same pattern, another method: fine.
  t.add(bind('t4', 'users::put', '/users/:id', 'PUT'));
  assert.equal(t.size, 2);
  assert.equal(t.match('GET', '/users/1')?.route.functionId, 'users::get');
});

test('the same function bound again to the same route replaces the old binding (reconnect replay)', () => {
  const t = new RouteTable();
  const old = bind('old', 'users::get', '/users/:id');
  t.add(old, old);
  const fresh = bind('new', 'users::get', '/users/:id');
  t.add(fresh, fresh);
  assert.equal(t.size, 1);
  assert.equal(t.remove('old', old)?.triggerId, 'old', 'late removal of the replaced binding drops it from standing by');
  assert.equal(t.match('GET', '/users/1')?.route.triggerId, 'new', '… and leaves the route to the binding that replaced it');
  // Re-registering the same trigger id with the same source object is idempotent too.
  const again = bind('new', 'users::get', '/users/:id');
  t.add(again, again);
  assert.equal(t.remove('new', fresh), undefined, 'a removal for an older delivery of the same id leaves the newer one');
  assert.equal(t.size, 1);
  assert.ok(t.remove('new', again));
  assert.equal(t.size, 0);
  assert.equal(t.match('GET', '/users/1'), null);
});

test('replicas: when the serving binding of a function goes, one that stood by serves the route again', () => {
  const t = new RouteTable();
  const a = bind('a', 'http::add', '/math/add', 'POST');
  const b = bind('b', 'http::add', '/math/add', 'POST');
  t.add(a, a);
  t.add(b, b); // a second replica of the worker binds the same route: it serves, a stands by
  assert.equal(t.match('POST', '/math/add')?.route.triggerId, 'b');
  assert.equal(t.isStandby('a'), true);
  assert.equal(t.size, 1);
  const gone = t.remove('b', b); // that replica left (a restart, a scale-down, a crash loop)
  assert.equal(gone?.triggerId, 'b');
  assert.equal(t.match('POST', '/math/add')?.route.triggerId, 'a', 'the route stays up while a is bound');
  assert.equal(t.servingAfter(gone!)?.triggerId, 'a');
  assert.equal(t.isStandby('a'), false);
  assert.deepEqual(t.list(), [{ trigger_id: 'a', function_id: 'http::add', http_method: 'POST', api_path: '/math/add' }]);
  // Another function still cannot take the route while a serves it.
  assert.throws(() => t.add(bind('c', 'other::fn', '/math/add', 'POST')), (e: unknown) => e instanceof TriggerConfigError && e.code === 'route_conflict');
  assert.ok(t.remove('a', a));
  assert.equal(t.match('POST', '/math/add'), null, 'gone with the last binding');
  // Three bindings: the newest one standing by takes over, and a standby removed first is skipped.
  const [x, y, z] = ['x', 'y', 'z'].map((id) => bind(id, 'f', '/p/:id'));
  for (const r of [x!, y!, z!]) t.add(r, r);
  assert.ok(t.remove('y', y));
  assert.ok(t.remove('z', z));
  assert.equal(t.match('GET', '/p/1')?.route.triggerId, 'x');
  t.clear();
  assert.equal(t.isStandby('x'), false);
});

test('removal takes routes away and frees the pattern for another function', () => {
  const t = new RouteTable();
  t.add(bind('s', 'f1', '/static'));
  t.add(bind('d', 'f2', '/items/:id'));
  assert.ok(t.remove('s'));
  assert.ok(t.remove('d'));
  assert.equal(t.remove('d'), undefined);
  assert.equal(t.match('GET', '/static'), null);
  assert.equal(t.match('GET', '/items/1'), null);
  t.add(bind('d2', 'f3', '/items/:key'));
  assert.equal(t.match('GET', '/items/1')?.route.functionId, 'f3');
  assert.deepEqual(t.list(), [{ trigger_id: 'd2', function_id: 'f3', http_method: 'GET', api_path: '/items/:key' }]);
});

test('a refused add leaves the existing binding of that trigger id in place', () => {
  const t = new RouteTable();
  t.add(bind('x', 'f', '/a'));
  assert.throws(() => t.add(bind('x', 'f', '/bad/(x)')), TriggerConfigError);
  assert.equal(t.match('GET', '/a')?.route.triggerId, 'x');
  // Same trigger id rebinding to another path moves the route.
  t.add(bind('x', 'f', '/b'));
  assert.equal(t.match('GET', '/a'), null);
  assert.equal(t.match('GET', '/b')?.route.triggerId, 'x');
});

test('non-ASCII patterns match the percent-encoded request path', () => {
  const t = new RouteTable();
  t.add(bind('c', 'cafe', '/café/:item'));
  assert.deepEqual(t.match('GET', '/caf%C3%A9/cr%C3%AApe')?.params, { item: 'crêpe' });
});
