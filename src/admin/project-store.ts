import type { Db } from "mongodb";
import { isDuplicateKey } from "../db/errors.js";

export interface ProjectRecord {
  projectId: string;
  name: string;
  gameId: number;
}

interface ProjectDoc {
  _id: string;
  name: string;
  game_id: number;
  created_at: Date;
}

export class DuplicateGameError extends Error {}

/**
 * The `projects` collection. A project is never changed or removed once made,
 * so the game → project answers are kept in the process: every launch issue
 * asks it, and FerretDB answers a lookup by `game_id` with a scan.
 */
export class ProjectStore {
  private readonly projects;
  private readonly byGame = new Map<number, ProjectRecord>();

  constructor(db: Db) {
    this.projects = db.collection<ProjectDoc>("projects");
  }

  async createIndexes(): Promise<void> {
    await this.projects.createIndex({ game_id: 1 }, { unique: true });
  }

  /** Throws DuplicateGameError when the game already belongs to a project. */
  async insertProject(project: ProjectRecord, now: Date): Promise<void> {
    try {
      await this.projects.insertOne({
        _id: project.projectId,
        name: project.name,
        game_id: project.gameId,
        created_at: now,
      });
    } catch (error) {
      if (isDuplicateKey(error)) throw new DuplicateGameError();
      throw error;
    }
  }

  async findProject(projectId: string): Promise<ProjectRecord | null> {
    return toRecord(await this.projects.findOne({ _id: projectId }));
  }

  async findProjectByGame(gameId: number): Promise<ProjectRecord | null> {
    const known = this.byGame.get(gameId);
    if (known) return known;
    // A game without a project is not remembered: its project may be created at any time.
    const project = toRecord(await this.projects.findOne({ game_id: gameId }));
    if (project) this.byGame.set(gameId, project);
    return project;
  }
}

function toRecord(doc: ProjectDoc | null): ProjectRecord | null {
  return doc && { projectId: doc._id, name: doc.name, gameId: doc.game_id };
}
