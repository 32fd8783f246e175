import { SvcError } from 'svc-sdk';

/**
 * A problem in config.yaml: the message starts with the file and names the key and the value, e.g.
 * `config.yaml: engine.port: must be an integer port from 0 to 65535, got "x"`. The engine's block
 * (this directory) and the supervisor's `workers:` both throw it; `svc` exits with status 2.
 */
export class ConfigFileError extends SvcError {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super('invalid_config', `${file}: ${message}`);
    this.name = 'ConfigFileError';
  }
}

/** A `${NAME}` of config.yaml whose variable is not set: the engine cannot start without it; the CLI may go on without it. */
export class UnsetVariableError extends ConfigFileError {
  constructor(
    file: string,
    message: string,
    readonly variable: string,
  ) {
    super(file, message);
    this.name = 'UnsetVariableError';
  }
}

/** `${NAME}` → the environment variable's value, so that secrets need not live in the file; a missing variable is an error naming it. */
export function expandEnv(file: string, key: string, value: string, env: NodeJS.ProcessEnv = process.env): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
    const v = env[name];
    if (v === undefined || v === '') throw new UnsetVariableError(file, `${key}: environment variable ${name} is not set`, name);
    return v;
  });
}

export function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
