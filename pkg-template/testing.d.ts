// Types of resumable-agent/testing: the saver conformance suite (Node, node:test).
import type { Checkpoint, Saver } from './index.js';

export interface ConformanceOptions {
  /** Replaces the value stored under `key` with something that is not a checkpoint, keeping its summary. */
  corrupt?: (saver: Saver, key: string) => Promise<void>;
  /** The store's value limit in bytes, when the saver does not say (`saver.maxValueBytes`). */
  maxValueBytes?: number;
}

export interface ConformanceResult {
  name: string;
  ok: boolean;
  /** Why a case did not apply (e.g. the saver does not compare and set). */
  skipped?: string;
  error?: unknown;
}

/** `makeSaver(namespace)`: a saver; savers made with different namespaces must not see each other's keys. */
export type SaverFactory = (namespace: string) => Saver | Promise<Saver>;

/** Registers every conformance case as a node:test test. */
export function saverConformance(makeSaver: SaverFactory, options?: ConformanceOptions): void;

/** Runs every case and reports each (never rejects). */
export function runSaverConformance(makeSaver: SaverFactory, options?: ConformanceOptions): Promise<ConformanceResult[]>;

/** A small checkpoint for saver tests. */
export function sampleCheckpoint(text: string, options?: { question?: string; step?: number; padding?: string }): Checkpoint;
