import { AsyncLocalStorage } from 'node:async_hooks';

/** What the SDK knows about the invocation a piece of code runs for; read by Logger and nested calls. */
export interface InvocationScope {
  functionId: string;
  invocationId: string;
  traceparent?: string;
  baggage?: string;
}

export const invocationScope = new AsyncLocalStorage<InvocationScope>();
