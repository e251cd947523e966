/**
 * The committed snapshot of Kubernetes' own OpenAPI schemas (`kubernetes-core-v1.json`), read once.
 * See `refresh-snapshot.ts` for where it comes from and how to refresh it.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { JSONSchemaProps } from '../crd.js';
import { structuralFromOpenApi, type DescriptionMode } from './structural.js';

export const SNAPSHOT_PATH = join(dirname(fileURLToPath(import.meta.url)), 'kubernetes-core-v1.json');

/** The schemas a CRD embeds; the snapshot keeps these and what they reference. */
export const SNAPSHOT_ROOTS = ['io.k8s.api.core.v1.PodSpec'] as const;

const snapshotSchema = z.object({
  source: z.object({
    document: z.string(),
    capturedAt: z.string(),
    roots: z.array(z.string()),
    refresh: z.string(),
  }),
  schemas: z.record(z.string(), z.record(z.string(), z.unknown())),
});
export type OpenApiSnapshot = z.infer<typeof snapshotSchema>;

let cached: OpenApiSnapshot | undefined;

export function openApiSnapshot(): OpenApiSnapshot {
  cached ??= snapshotSchema.parse(JSON.parse(readFileSync(SNAPSHOT_PATH, 'utf8')));
  return cached;
}

/**
 * How much of Kubernetes' field documentation a CRD keeps: the first sentence of each field (what
 * `kubectl explain` prints as its summary). The full text would make the ModelServing CRD about 0.7 MB
 * of JSON (two PodSpecs), half of etcd's 1.5 MiB request limit before server-side apply's managedFields;
 * docs/modelserving.md says how big it is.
 */
export const EMBEDDED_DESCRIPTIONS: DescriptionMode = 'first-sentence';

/** The structural CRD schema of a Kubernetes type from the snapshot (a fresh object on every call). */
export function embeddedKubernetesSchema(name: string): JSONSchemaProps {
  return structuralFromOpenApi(openApiSnapshot().schemas, name, { descriptions: EMBEDDED_DESCRIPTIONS });
}
