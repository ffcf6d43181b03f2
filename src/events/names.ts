/**
 * Event names become field names inside rollup documents. A name is letters,
 * digits and `_ - . :`; the `.` would split a field path, so it is stored as
 * `%` (never part of a name), behind a `_` that keeps every stored key clear
 * of anything an object or the database treats specially.
 */
export const nameField = (name: string): string => `_${name.replaceAll(".", "%")}`;

export const nameOfField = (field: string): string => field.slice(1).replaceAll("%", ".");
