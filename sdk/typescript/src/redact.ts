/**
 * Engine addresses may carry a secret: `ws://host:49134/?token=…` (for clients that cannot set
 * headers) or `scheme://user:password@host`. Wherever an address is printed, logged or returned,
 * it goes through redactAddress first, so a secret given on a command line does not end up in
 * terminals, logs, error reports or the console's page.
 */

/** Query parameters whose values are secrets: token, access_token, password, secret, api_key… */
const SECRET_PARAM = /([?&;](?:[^=&#;\s,]*?)(?:token|password|passwd|secret|key)(?:[^=&#;\s,]*)=)[^&#;\s,]+/gi;
/** The password of `scheme://user:password@host`. */
const USERINFO_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^/?#@\s,:]*:)[^/?#@\s,]+@/gi;

export const REDACTED = '***';

/**
 * `address` with every secret replaced by `***`, the rest untouched. Accepts a comma-separated
 * list of addresses too (the SDKs' failover form).
 */
export function redactAddress(address: string): string {
  return address.replace(SECRET_PARAM, `$1${REDACTED}`).replace(USERINFO_PASSWORD, `$1${REDACTED}@`);
}
