import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A loopback TCP proxy in front of the engine, so a test can cut a client's connection the way a
 * network failure would (both sockets destroyed, no WebSocket close handshake) while the client
 * itself stays unmodified.
 */
export interface TcpProxy {
  url: string;
  /** Destroy every connection currently open through the proxy; new ones are still accepted. */
  cut(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = (server.address() as AddressInfo).port;
  const cut = (): void => {
    for (const [a, b] of [...pairs]) {
      a.destroy();
      b.destroy();
    }
    pairs.clear();
  };
  return {
    url: `ws://127.0.0.1:${port}`,
    cut,
    close: () => {
      cut();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
