import { randomBytes } from "node:crypto";
import type { Clock } from "../clock.js";
import { AlreadyExistsError, InvalidArgumentError, NotFoundError } from "../errors.js";
import {
  type ApiKeyCache,
  type ApiKeyStore,
  type ApiKeyType,
  generateApiKey,
  hashApiKey,
  isProjectKeyType,
  type ListedApiKey,
  type Scope,
  SCOPES_BY_TYPE,
} from "./api-keys.js";
import type { EntitlementRecord, EntitlementStore } from "./entitlement-store.js";
import { DuplicateGameError, type ProjectRecord, type ProjectStore } from "./project-store.js";

export interface AdminOptions {
  projectStore: ProjectStore;
  apiKeyStore: ApiKeyStore;
  entitlementStore: EntitlementStore;
  /** The authenticator's cache, told of each revocation. */
  apiKeys: ApiKeyCache;
  clock: Clock;
}

/** A key as it is shown once, at creation. */
export interface IssuedApiKey {
  keyId: string;
  key: string;
  type: ApiKeyType;
  scopes: Scope[];
  /** Null for platform and admin keys. */
  projectId: string | null;
}

export type Entitlement = Omit<EntitlementRecord, "updatedAt">;

/** One page of a listing; pages start at 1. */
export interface Page {
  page: number;
  pageSize: number;
}

/** A page's items and how many there are over all pages. */
export interface Listing<T> {
  items: T[];
  total: number;
}

const skipOf = ({ page, pageSize }: Page): number => (page - 1) * pageSize;

/** Projects, API keys and entitlements: what the platform's operators manage. */
export class Admin {
  constructor(private readonly options: AdminOptions) {}

  /** A project for one game, with its first private and public keys. */
  async createProject(name: string, gameId: number) {
    const { projectStore, clock } = this.options;
    const project: ProjectRecord = { projectId: `prj_${randomBytes(9).toString("base64url")}`, name, gameId };
    try {
      await projectStore.insertProject(project, clock.now());
    } catch (error) {
      if (error instanceof DuplicateGameError) {
        throw new AlreadyExistsError(`game_id ${gameId} already belongs to a project`, { cause: error });
      }
      throw error;
    }
    const privateKey = await this.issueKey("private", project.projectId);
    const publicKey = await this.issueKey("public", project.projectId);
    return { project, privateKey: privateKey.key, publicKey: publicKey.key };
  }

  /** Private and public keys belong to a project; platform and admin keys to none. */
  async createApiKey(type: ApiKeyType, projectId: string | null): Promise<IssuedApiKey> {
    if (isProjectKeyType(type)) {
      if (projectId === null) throw new InvalidArgumentError(`project_id: required for ${type} keys`);
      if (!(await this.options.projectStore.findProject(projectId))) {
        throw new NotFoundError(`project_id: no project ${projectId}`);
      }
    } else if (projectId !== null) {
      throw new InvalidArgumentError(`project_id: ${type} keys belong to no project`);
    }
    return this.issueKey(type, projectId);
  }

  /** When the key was revoked (now, or earlier if it already was). */
  async revokeApiKey(keyId: string): Promise<Date> {
    const { apiKeyStore, apiKeys, clock } = this.options;
    let revokedAt: Date | null;
    try {
      revokedAt = await apiKeyStore.revokeApiKey(keyId, clock.now());
    } finally {
      // Also when the store failed after its write: a key that may be revoked must not stay cached.
      apiKeys.forget(keyId);
    }
    if (!revokedAt) throw new NotFoundError(`key_id: no key ${keyId}`);
    return revokedAt;
  }

  async setEntitlement(entitlement: Entitlement): Promise<void> {
    await this.options.entitlementStore.upsertEntitlement({ ...entitlement, updatedAt: this.options.clock.now() });
  }

  /** One project, or a not-found naming it. */
  async project(projectId: string): Promise<ProjectRecord> {
    const project = await this.options.projectStore.findProject(projectId);
    if (!project) throw new NotFoundError(`project_id: no project ${projectId}`);
    return project;
  }

  async listProjects(page: Page): Promise<Listing<ProjectRecord>> {
    const { projects, total } = await this.options.projectStore.listProjects(skipOf(page), page.pageSize);
    return { items: projects, total };
  }

  /** Every key, or a project's; what a key is (type, scopes, state), never the key. */
  async listApiKeys(projectId: string | undefined, page: Page): Promise<Listing<ListedApiKey>> {
    const { keys, total } = await this.options.apiKeyStore.listApiKeys(projectId, skipOf(page), page.pageSize);
    return { items: keys, total };
  }

  async listEntitlements(
    of: { platformUserId?: string; gameId?: number },
    page: Page,
  ): Promise<Listing<EntitlementRecord>> {
    const { entitlementStore } = this.options;
    const { entitlements, total } = await entitlementStore.listEntitlements(of, skipOf(page), page.pageSize);
    return { items: entitlements, total };
  }

  private async issueKey(type: ApiKeyType, projectId: string | null): Promise<IssuedApiKey> {
    const { keyId, key } = generateApiKey(type);
    const scopes = [...SCOPES_BY_TYPE[type]];
    await this.options.apiKeyStore.insertApiKey(
      { keyId, type, scopes, projectId, hash: hashApiKey(key) },
      this.options.clock.now(),
    );
    return { keyId, key, type, scopes, projectId };
  }
}
