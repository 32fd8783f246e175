/**
 * The Kubernetes objects of a svc project (`svc deploy kubernetes`, docs/deploy.md): plain data,
 * one file's worth per component; kubernetes-project.ts reads the project and writes the files.
 */
import type { BuiltinWorker } from '../../supervisor/worker-entries.js';
import { DEFAULT_HTTP_CONFIG } from '../../workers/http/config.js';

export const ENGINE_PORT = 49134;
export const HTTP_PORT = DEFAULT_HTTP_CONFIG.port;
/** How long a terminating engine pod keeps serving before its SIGTERM: the Service stops routing to it meanwhile. */
export const PRE_STOP_SECONDS = 5;
/** After the drain: closing connections (1 s), leaving the cluster (2 s), exiting; with room to spare. */
const CLOSE_MARGIN_SECONDS = 10;
/** The Secret's keys, as environment variables (the same names as docker-compose.yml's). */
export const TOKEN_KEYS = ['SVC_ADMIN_TOKEN', 'SVC_WORKER_TOKEN', 'SVC_QUEUE_TOKEN', 'SVC_CRON_TOKEN'] as const;
export const REDIS_URL_KEY = 'SVC_REDIS_URL';

type Obj = Record<string, unknown>;

export interface WorkerPlan {
  /** The worker's name in config.yaml (SVC_WORKER_NAME). */
  name: string;
  /** The Kubernetes name of its Deployment. */
  k8sName: string;
  builtin?: BuiltinWorker;
  /** python or typescript (svc.worker.yaml's runtime.kind); the readiness probe runs in it. */
  kind?: string;
  image: string;
  replicas: number;
  env: Record<string, string>;
  config: Record<string, unknown>;
}

export interface StackPlan {
  project: string;
  engineImage: string;
  /** 1: one engine; more: cluster mode on the Redis backplane. */
  engines: number;
  /** config.yaml's engine block without host, port, auth and cluster (the manifests set those). */
  engineConfig: Record<string, unknown>;
  shutdownGraceMs: number;
  /** external: the URL is in the Secret (it may hold a password); null: no Redis is needed. */
  redis: { kind: 'in-cluster'; image: string } | { kind: 'external' } | null;
  /** The Secret the tokens (and an external Redis URL) come from. */
  secretName: string;
  workers: WorkerPlan[];
}

export const ENGINE_NAME = 'svc-engine';
export const REDIS_NAME = 'svc-redis';

/** The entry file of each built-in in the engine image (Dockerfile: /opt/svc). */
const BUILTIN_MAIN: Record<BuiltinWorker, string> = {
  'svc-state': '/opt/svc/dist/src/workers/state/main.js',
  'svc-http': '/opt/svc/dist/src/workers/http/main.js',
  'svc-queue': '/opt/svc/dist/src/workers/queue/main.js',
  'svc-cron': '/opt/svc/dist/src/workers/cron/main.js',
};
/** The token each built-in connects with (its rights: engineConfigYaml's tokens). */
const BUILTIN_TOKEN: Partial<Record<BuiltinWorker, (typeof TOKEN_KEYS)[number]>> = { 'svc-queue': 'SVC_QUEUE_TOKEN', 'svc-cron': 'SVC_CRON_TOKEN' };
/** The built-ins whose store is Redis on Kubernetes: a pod's disk does not outlive it, and replicas share the store. */
export const STORED_BUILTINS: readonly BuiltinWorker[] = ['svc-state', 'svc-queue', 'svc-cron'];

export function terminationGraceSeconds(shutdownGraceMs: number): number {
  return PRE_STOP_SECONDS + Math.ceil(shutdownGraceMs / 1000) + CLOSE_MARGIN_SECONDS;
}

function labels(plan: StackPlan, name: string, component: string): Obj {
  return { 'app.kubernetes.io/name': name, 'app.kubernetes.io/component': component, 'app.kubernetes.io/part-of': plan.project };
}
function selector(plan: StackPlan, name: string): Obj {
  return { 'app.kubernetes.io/name': name, 'app.kubernetes.io/part-of': plan.project };
}
/** The variable `name` from the Secret's `key` (by default the same name). */
const secretEnv = (plan: StackPlan, name: string, key = name): Obj => ({ name, valueFrom: { secretKeyRef: { name: plan.secretName, key } } });
function redisUrlEnv(plan: StackPlan): Obj {
  return plan.redis?.kind === 'external' ? secretEnv(plan, REDIS_URL_KEY) : { name: REDIS_URL_KEY, value: `redis://${REDIS_NAME}:6379` };
}

function deployment(plan: StackPlan, name: string, component: string, replicas: number, pod: Obj, strategy?: Obj): Obj {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels: labels(plan, name, component) },
    spec: {
      replicas,
      ...(strategy ? { strategy } : {}),
      selector: { matchLabels: selector(plan, name) },
      template: { metadata: { labels: labels(plan, name, component) }, spec: pod },
    },
  };
}

function service(plan: StackPlan, name: string, component: string, port: number, portName: string): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, labels: labels(plan, name, component) },
    spec: { selector: selector(plan, name), ports: [{ name: portName, port, targetPort: portName }] },
  };
}

/** The engine's config.yaml in the pod: the project's engine block, listening for the cluster, tokens from the Secret. */
export function engineConfigYaml(plan: StackPlan): Record<string, unknown> {
  const t = (name: string, token: string, rights: Obj): Obj => ({ name, token: `\${${token}}`, ...rights });
  return {
    engine: {
      ...plan.engineConfig,
      host: '0.0.0.0',
      port: ENGINE_PORT,
      // Each pod is reached at its own IP by the others (they relay sockets of its channels to it).
      ...(plan.engines > 1 ? { cluster: { redis_url: `\${${REDIS_URL_KEY}}`, node_id: '${SVC_NODE_ID}', advertise_url: `ws://\${SVC_POD_IP}:${ENGINE_PORT}` } } : {}),
      // The roles of docker-compose.yml's tokens (docs/security.md).
      auth: {
        tokens: [
          t('admin', 'SVC_ADMIN_TOKEN', { admin: true }),
          t('workers', 'SVC_WORKER_TOKEN', { call: ['*'], register: ['*'], trigger_types: ['*'], names: ['svc-state', 'svc-http'] }),
          t('queue', 'SVC_QUEUE_TOKEN', {
            call: ['*', 'engine::functions::info'],
            register: ['engine::queue::enqueue', 'queue::*', 'iii::durable::publish', 'iii::queue::*'],
            trigger_types: ['durable:subscriber'],
            names: ['svc-queue'],
          }),
          t('cron', 'SVC_CRON_TOKEN', { call: ['cron::run_now::*'], register: ['cron::*'], trigger_types: ['cron'], names: ['svc-cron'] }),
        ],
      },
    },
    // Kubernetes runs every worker as a Deployment of its own: the engine supervises none.
    workers: [],
  };
}

/** ConfigMap, Deployment and Service of the engine(s). */
export function engineObjects(plan: StackPlan, configText: string): Obj[] {
  const probe = (path: string, period: number, failures: number): Obj => ({
    httpGet: { path, port: 'ws' },
    periodSeconds: period,
    timeoutSeconds: 3,
    failureThreshold: failures,
  });
  const env: Obj[] = TOKEN_KEYS.map((k) => secretEnv(plan, k));
  if (plan.engines > 1) {
    env.push(redisUrlEnv(plan), { name: 'SVC_NODE_ID', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }, { name: 'SVC_POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
  }
  const pod: Obj = {
    terminationGracePeriodSeconds: terminationGraceSeconds(plan.shutdownGraceMs),
    containers: [
      {
        name: 'engine',
        image: plan.engineImage,
        args: ['start', '--config', '/project/config.yaml'],
        ports: [{ name: 'ws', containerPort: ENGINE_PORT }],
        env,
        volumeMounts: [{ name: 'config', mountPath: '/project/config.yaml', subPath: 'config.yaml', readOnly: true }],
        readinessProbe: probe('/readyz', 5, 2),
        livenessProbe: { ...probe('/healthz', 10, 3), initialDelaySeconds: 5 },
        lifecycle: { preStop: { sleep: { seconds: PRE_STOP_SECONDS } } },
        resources: { requests: { cpu: '250m', memory: '256Mi' } },
      },
    ],
    volumes: [{ name: 'config', configMap: { name: `${ENGINE_NAME}-config` } }],
  };
  // One engine: a second one during a rollout would split the workers between two engines that do
  // not know each other. In cluster mode engines share everything through Redis, so roll one by one.
  const strategy = plan.engines > 1 ? { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } } : { type: 'Recreate' };
  return [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${ENGINE_NAME}-config`, labels: labels(plan, ENGINE_NAME, 'engine') }, data: { 'config.yaml': configText } },
    deployment(plan, ENGINE_NAME, 'engine', plan.engines, pod, strategy),
    service(plan, ENGINE_NAME, 'engine', ENGINE_PORT, 'ws'),
  ];
}

/** Redis in the cluster: a Deployment on a volume claim, its Service, and a policy that lets only the stack's pods in. */
export function redisObjects(plan: StackPlan, image: string): Obj[] {
  const pod: Obj = {
    containers: [
      {
        name: 'redis',
        image,
        args: ['redis-server', '--appendonly', 'yes', '--dir', '/data', '--protected-mode', 'no'],
        ports: [{ name: 'redis', containerPort: 6379 }],
        volumeMounts: [{ name: 'data', mountPath: '/data' }],
        readinessProbe: { exec: { command: ['redis-cli', 'ping'] }, periodSeconds: 5 },
        livenessProbe: { tcpSocket: { port: 'redis' }, periodSeconds: 10 },
        resources: { requests: { cpu: '100m', memory: '128Mi' } },
      },
    ],
    volumes: [{ name: 'data', persistentVolumeClaim: { claimName: `${REDIS_NAME}-data` } }],
  };
  return [
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: `${REDIS_NAME}-data`, labels: labels(plan, REDIS_NAME, 'redis') },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    },
    deployment(plan, REDIS_NAME, 'redis', 1, pod, { type: 'Recreate' }),
    service(plan, REDIS_NAME, 'redis', 6379, 'redis'),
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: REDIS_NAME, labels: labels(plan, REDIS_NAME, 'redis') },
      spec: {
        podSelector: { matchLabels: selector(plan, REDIS_NAME) },
        policyTypes: ['Ingress'],
        ingress: [{ from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/part-of': plan.project } } }], ports: [{ port: 6379, protocol: 'TCP' }] }],
      },
    },
  ];
}

/** Where svc SDK workers keep their ready file in the pod (SVC_READY_FILE; sdk ready-file). */
export const READY_FILE = '/tmp/svc-ready';
/** A ready file older than this fails the probe: the worker's event loop stopped touching it (every 5 s). */
const READY_FILE_MAX_AGE_S = 30;

/**
 * A worker's readiness, run in the worker's own runtime (the image has nothing else we can count
 * on): its ready file says `ready` and is fresh, i.e. the engine accepted it and its functions are
 * registered, and its event loop runs. A program that writes no ready file (one written against
 * iii-sdk) is ready when the engine is: then the engine's /readyz answers (`engineReadyz`; null for
 * the built-ins, which always write the file: no file, not ready). Not a liveness probe: a
 * worker whose engine is away reconnects by itself, and restarting every worker when the engine
 * restarts helps nothing; a worker that exits is restarted by Kubernetes anyway.
 */
export function workerReadinessCommand(kind: 'python' | 'node', engineReadyz: string | null, readyFile = READY_FILE): string[] {
  const [url, file] = [JSON.stringify(engineReadyz), JSON.stringify(readyFile)];
  const noFile = engineReadyz === null ? { python: '    sys.exit(1)', node: 'process.exit(1)' } : { python: `    urllib.request.urlopen(${url}, timeout=3)\n    sys.exit(0)`, node: `fetch(${url}).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))` };
  return kind === 'python'
    ? [
        'python',
        '-c',
        `import os, sys, time, urllib.request\ntry:\n    st = os.stat(${file})\nexcept FileNotFoundError:\n${noFile.python}\nwith open(${file}) as f:\n    ready = f.read(6) == "ready "\nsys.exit(0 if ready and time.time() - st.st_mtime < ${READY_FILE_MAX_AGE_S} else 1)\n`,
      ]
    : [
        'node',
        '-e',
        `const fs = require('fs'); const st = fs.statSync(${file}, { throwIfNoEntry: false });\nif (!st) ${noFile.node};\nelse process.exit(fs.readFileSync(${file}, 'utf8').startsWith('ready ') && Date.now() - st.mtimeMs < ${READY_FILE_MAX_AGE_S * 1000} ? 0 : 1);\n`,
      ];
}

function workerReadiness(w: WorkerPlan): Obj | null {
  const url = `http://${ENGINE_NAME}:${ENGINE_PORT}/readyz`;
  const kind = w.kind === 'python' ? 'python' : w.kind === 'typescript' || w.builtin ? 'node' : null;
  return kind ? { exec: { command: workerReadinessCommand(kind, w.builtin ? null : url) }, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 3 } : null;
}

/** A worker's Deployment (and svc-http's Service). */
export function workerObjects(plan: StackPlan, w: WorkerPlan): Obj[] {
  const token = (w.builtin && BUILTIN_TOKEN[w.builtin]) ?? 'SVC_WORKER_TOKEN';
  const config = { ...w.config };
  const env: Obj[] = [];
  if (w.builtin && STORED_BUILTINS.includes(w.builtin)) {
    env.push(redisUrlEnv(plan));
    // $(VAR): Kubernetes puts the variable defined above into this value.
    Object.assign(config, { store: 'redis', redis_url: `$(${REDIS_URL_KEY})` });
  }
  if (w.builtin === 'svc-http') Object.assign(config, { host: '0.0.0.0', port: HTTP_PORT });
  env.push({ name: 'SVC_URL', value: `ws://${ENGINE_NAME}:${ENGINE_PORT}` }, secretEnv(plan, 'SVC_TOKEN', token), { name: 'SVC_WORKER_NAME', value: w.name });
  env.push({ name: 'SVC_READY_FILE', value: READY_FILE });
  if (Object.keys(config).length > 0) env.push({ name: 'SVC_WORKER_CONFIG', value: JSON.stringify(config) });
  // A variable set above wins: config.yaml's env is written for this machine (an SVC_URL on localhost).
  for (const [name, value] of Object.entries(w.env)) if (!env.some((e) => e.name === name)) env.push({ name, value });
  // svc-http too: a replica cut off from the engine takes no requests (the Service skips it).
  const readiness = workerReadiness(w);
  const container: Obj = {
    name: 'worker',
    image: w.image,
    ...(w.builtin ? { command: ['node', BUILTIN_MAIN[w.builtin]] } : {}),
    ...(w.builtin === 'svc-http' ? { ports: [{ name: 'http', containerPort: HTTP_PORT }] } : {}),
    env,
    ...(readiness ? { readinessProbe: readiness } : {}),
    ...(w.builtin === 'svc-http' ? { livenessProbe: { tcpSocket: { port: 'http' }, periodSeconds: 10 } } : {}),
    resources: { requests: { cpu: '100m', memory: '128Mi' } },
  };
  const out = [deployment(plan, w.k8sName, 'worker', w.replicas, { containers: [container] })];
  if (w.builtin === 'svc-http') out.push(service(plan, w.k8sName, 'worker', HTTP_PORT, 'http'));
  return out;
}

/** The generated Secret: random tokens, written once and kept on later runs. */
export function secretObject(plan: StackPlan, values: Record<string, string>): Obj {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name: plan.secretName, labels: labels(plan, plan.secretName, 'secret') }, type: 'Opaque', stringData: values };
}
