import { decide, type CompiledConfig, type ConfigPlayer, type Decision } from "./rules/compiled.js";

/** Players whose launch decision an instance keeps; past it the oldest are decided again when they come back. */
const REMEMBERED = 10_000;

interface Remembered {
  compiled: CompiledConfig;
  profileVersion: number;
  decision: Decision;
}

/**
 * The launch decisions (the in_launch values and the eligible experiments) this instance made, by project and
 * player: a decision depends on nothing but the project's compile and the player's profile, so it holds while both
 * stay the same, and a player launching again is not decided (nor hashed) again.
 */
export class LaunchDecisions {
  private readonly remembered = new Map<string, Remembered>();

  /** `player`'s launch decision; `profileVersion`: their profile's version (0: none), which every write moves. */
  of(compiled: CompiledConfig, player: ConfigPlayer, profileVersion: number): Decision {
    const id = `${compiled.projectId}/${player.identityKey}`;
    const kept = this.remembered.get(id);
    if (kept?.compiled === compiled && kept.profileVersion === profileVersion) return kept.decision;
    const decision = decide(compiled, player);
    this.remembered.delete(id);
    this.remembered.set(id, { compiled, profileVersion, decision });
    if (this.remembered.size > REMEMBERED) this.remembered.delete(this.remembered.keys().next().value!);
    return decision;
  }
}
