import type { Db } from "mongodb";
import { isDuplicateKey } from "../db/errors.js";
import { NotFoundError } from "../errors.js";

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
 * so the projects found are kept in the process: every launch issue asks for
 * the game's (FerretDB answers a lookup by `game_id` with a scan), and launch
 * records, kept per game, are written for a project.
 */
export class ProjectStore {
  private readonly projects;
  private readonly byGame = new Map<number, ProjectRecord>();
  private readonly byId = new Map<string, ProjectRecord>();

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
    return this.byId.get(projectId) ?? this.remember(toRecord(await this.projects.findOne({ _id: projectId })));
  }

  /** The game of a project that exists: the caller's, or one a launch was issued for. */
  async gameOf(projectId: string): Promise<number> {
    const project = await this.findProject(projectId);
    if (!project) throw new NotFoundError(`no project ${projectId}`);
    return project.gameId;
  }

  async findProjectByGame(gameId: number): Promise<ProjectRecord | null> {
    return this.byGame.get(gameId) ?? this.remember(toRecord(await this.projects.findOne({ game_id: gameId })));
  }

  /** A page of the projects, by game id, and how many there are. */
  async listProjects(skip: number, limit: number): Promise<{ projects: ProjectRecord[]; total: number }> {
    const [docs, total] = await Promise.all([
      this.projects.find().sort({ game_id: 1 }).skip(skip).limit(limit).toArray(),
      this.projects.countDocuments(),
    ]);
    return { projects: docs.map((doc) => toRecord(doc)), total };
  }

  /** A project not found is not remembered: it may be created at any time. */
  private remember(project: ProjectRecord | null): ProjectRecord | null {
    if (project) {
      this.byId.set(project.projectId, project);
      this.byGame.set(project.gameId, project);
    }
    return project;
  }
}

function toRecord(doc: ProjectDoc): ProjectRecord;
function toRecord(doc: ProjectDoc | null): ProjectRecord | null;
function toRecord(doc: ProjectDoc | null): ProjectRecord | null {
  return doc && { projectId: doc._id, name: doc.name, gameId: doc.game_id };
}
