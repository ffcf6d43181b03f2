/**
 * The `_id` of a document that belongs to one project. Project ids contain no
 * "/", so ids of different projects never collide, and a lookup by `_id` alone
 * (the only indexed lookup FerretDB 1.24 makes cheaply) stays within a project.
 */
export function projectScopedId(projectId: string, key: string): string {
  return `${projectId}/${key}`;
}

/** The project of a projectScopedId. */
export function projectOfId(id: string): string {
  return id.slice(0, id.indexOf("/"));
}

/**
 * The filter on `_id` of every document of one project: the ids starting with
 * "<project>/" ("0" follows "/"). Both engines answer it from the `_id` index
 * (FerretDB through the project's build, src/db/ferretdb-build.ts), where a
 * filter on `project_id` scans every project's documents on FerretDB.
 */
export function projectIdRange(projectId: string): { $gte: string; $lt: string } {
  return { $gte: `${projectId}/`, $lt: `${projectId}0` };
}
