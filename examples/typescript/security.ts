// Signed and sealed checkpoints, limits and saver timeouts, as TypeScript sees them (checked by tsc --noEmit).
import {
  agent, scriptedModel, isInterrupted, memorySaver, CheckpointError, InstanceLostError, memoryUsage,
  type Checkpoint, type SealedCheckpoint,
} from 'resumable-agent';

const checkpointKeys = { current: 'k2', keys: { k1: process.env.OLD_KEY ?? 'an old secret, 16+ bytes', k2: new Uint8Array(32) } };

export async function signed(): Promise<Checkpoint> {
  const a = agent({ model: scriptedModel(['done']), checkpointKeys, limits: { maxCheckpointBytes: 1 << 20, maxDepth: 32 } });
  const r = await a.prompt('hi');
  const kid: string | undefined = r.checkpoint.signature?.kid;
  void kid;
  try {
    return (await a.resume(r.checkpoint, '')).checkpoint;
  } catch (e) {
    if (e instanceof CheckpointError && e.code === 'SIGNATURE') throw new Error('changed or not ours');
    // @ts-expect-error a CheckpointError's code is one of six (fails if it degrades to string)
    if (e instanceof CheckpointError && e.code === 'BAD') throw e;
    throw e;
  }
}

export async function sealed(): Promise<SealedCheckpoint> {
  const a = agent({ model: scriptedModel(['done']), checkpointKeys, sealed: true });
  const r = await a.prompt('hi');
  const envelope: SealedCheckpoint = r.checkpoint;
  // @ts-expect-error a sealed checkpoint hides its messages (fails if sealed agents return plain checkpoints)
  void r.checkpoint.messages;
  if (isInterrupted(r)) console.log(r.question);
  const s = a.session(memorySaver(), 'u1', { timeoutMs: 2_000 });
  const again: SealedCheckpoint | null = await s.checkpoint();
  void again;
  return envelope;
}

export function watch(e: unknown): number {
  if (e instanceof InstanceLostError) return memoryUsage().instancesReplaced;
  return memoryUsage().wasmBytes;
}
