/**
 * The flags of every command that talks to a running engine as a client: which engine (--address)
 * and with what token (--token). Defined once so `svc trigger`, `svc queue …` and `svc cron …` say
 * and do the same; withClient (client.ts) applies the fallbacks: --token, else $SVC_TOKEN, else the
 * token of the engine running for ./config.yaml, handed only to that engine.
 */
import { Flags } from '@oclif/core';
import type { Worker } from 'svc-sdk';
import { ADDRESS_DEFAULT, engineAddress, withClient } from './client.js';

export const addressFlag = Flags.string({ summary: `Engine address (${ADDRESS_DEFAULT}).` });
export const tokenFlag = Flags.string({ summary: "Token to connect with (default: $SVC_TOKEN, else the local engine's own)." });

/** `--address` and `--token`, for a command's `flags`. */
export const engineFlags = { address: addressFlag, token: tokenFlag };

/** What a command parsed of engineFlags: where withClient is called. */
export interface EngineFlagValues {
  address?: string | undefined;
  token?: string | undefined;
}

/** withClient on the engine and with the token these flags pick. */
export function withEngine<T>(flags: EngineFlagValues, fn: (w: Worker) => Promise<T>, connectTimeoutMs = 5000): Promise<T> {
  return withClient(engineAddress(flags.address), fn, connectTimeoutMs, flags.token);
}
