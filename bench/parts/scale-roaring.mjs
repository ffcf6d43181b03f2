import { createRequire, register } from "node:module";

/**
 * `roaring` is CommonJS whose exports Node's ES module loader cannot list, so src/sets/bitmap.ts's named import of
 * RoaringBitmap32 fails outside vitest (whose loader makes the name up). Imported before any module of src, this
 * module has every later import of `roaring` get it instead (scale-roaring-hooks.mjs), and it names the export.
 */
const roaring = createRequire(import.meta.url)("roaring");
export const { RoaringBitmap32 } = roaring;
export default roaring;

register("./scale-roaring-hooks.mjs", import.meta.url);
