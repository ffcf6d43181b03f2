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
  return prefixRange(`${projectId}/`);
}

/**
 * Every `_id` starting with `prefix`, which ends in "/" ("0" follows it): one range of the `_id` index on both
 * engines, when no character of the prefix needs escaping in JSON (src/db/ferretdb-build.ts).
 */
export function prefixRange(prefix: string): { $gte: string; $lt: string } {
  return { $gte: prefix, $lt: `${prefix.slice(0, -1)}0` };
}

/**
 * A user's text as a part of an `_id` that ranges of `_id` may span: percent-encoded, so it holds no "/" and only
 * characters above the quote that JSON keeps as they are (what the embedded engine's range of `_id` needs).
 */
export const idPart = (text: string): string =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
