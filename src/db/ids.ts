/**
 * The `_id` of a document that belongs to one project. Project ids contain no
 * "/", so ids of different projects never collide, and a lookup by `_id` alone
 * (the only indexed lookup FerretDB 1.24 makes cheaply) stays within a project.
 */
export function projectScopedId(projectId: string, key: string): string {
  return `${projectId}/${key}`;
}
