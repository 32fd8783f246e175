import type { Browser, Page } from 'playwright-core';
import { startConsoleServer, type ConsoleServer } from '../../src/console-server/server.js';
import { launchChromium } from '../../test/helpers/chromium.js';

/** The console server of an engine, connected, and a Chromium page (1280×800) to drive it. */
export interface ConsolePage {
  server: ConsoleServer;
  page: Page;
  /** Closes the browser, then the console server. */
  close(): Promise<void>;
}

export async function openConsolePage(engineUrl: string): Promise<ConsolePage> {
  const server = await startConsoleServer({ engineUrl, port: 0 });
  let browser: Browser | undefined;
  try {
    await server.worker.ready(5000);
    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const opened = browser;
    return {
      server,
      page,
      close: async () => {
        await opened.close();
        await server.close();
      },
    };
  } catch (e) {
    await browser?.close();
    await server.close();
    throw e;
  }
}
