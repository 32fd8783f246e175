import { test } from 'node:test';
import assert from 'node:assert/strict';
import { redactAddress } from 'svc-sdk';

test('redactAddress hides tokens and passwords in engine addresses and leaves the rest as given', () => {
  const cases: Array<[string, string]> = [
    ['ws://127.0.0.1:49134', 'ws://127.0.0.1:49134'],
    ['ws://127.0.0.1:49134/?token=s3cr3t-0123456789', 'ws://127.0.0.1:49134/?token=***'],
    ['ws://h:1?token=abc&x=1', 'ws://h:1?token=***&x=1'],
    ['ws://h:1/?x=1&access_token=abc#f', 'ws://h:1/?x=1&access_token=***#f'],
    ['ws://h:1/?TOKEN=abc', 'ws://h:1/?TOKEN=***'],
    ['ws://h:1/?api_key=abc&password=p&secret=s', 'ws://h:1/?api_key=***&password=***&secret=***'],
    ['ws://h:1/?token=', 'ws://h:1/?token='],
    ['ws://user:pa55@h:1/', 'ws://user:***@h:1/'],
    ['redis://:pa55@h:6379/0', 'redis://:***@h:6379/0'],
    ['ws://user@h:1/', 'ws://user@h:1/'],
    // The SDKs' failover list: every address in it.
    ['ws://a:1/?token=one,ws://b:2/?token=two', 'ws://a:1/?token=***,ws://b:2/?token=***'],
    ['not a url ?token=abc', 'not a url ?token=***'],
  ];
  for (const [given, shown] of cases) assert.equal(redactAddress(given), shown, given);
});
