import { URL } from "node:url";

/** Module hooks (scale-roaring.mjs): `roaring` resolves to scale-roaring.mjs, which names its export. */
const shim = new URL("./scale-roaring.mjs", import.meta.url).href;

export async function resolve(specifier, context, next) {
  return specifier === "roaring" ? { url: shim, shortCircuit: true } : next(specifier, context);
}
