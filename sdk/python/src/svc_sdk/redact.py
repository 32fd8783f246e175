"""Engine addresses without their secrets, for logs and error messages.

An address may carry a token (`ws://host:49134/?token=...`, for clients that cannot set headers)
or a password (`scheme://user:password@host`). Wherever the SDK logs or reports an address it goes
through `redact_address` first, so a secret in $SVC_URL does not end up in terminals and log files.
The TypeScript SDK's `redactAddress` follows the same rules.
"""

from __future__ import annotations

import re

REDACTED = "***"

# Query parameters whose values are secrets: token, access_token, password, secret, api_key, ...
_SECRET_PARAM = re.compile(
    r"([?&;][^=&#;\s,]*?(?:token|password|passwd|secret|key)[^=&#;\s,]*=)[^&#;\s,]+",
    re.IGNORECASE,
)
# The password of scheme://user:password@host.
_USERINFO_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/?#@\s,:]*:)[^/?#@\s,]+@", re.IGNORECASE)


def redact_address(address: str) -> str:
    """`address` (or a comma-separated list of them) with every secret replaced by ***."""
    return _USERINFO_PASSWORD.sub(rf"\g<1>{REDACTED}@", _SECRET_PARAM.sub(rf"\g<1>{REDACTED}", address))
