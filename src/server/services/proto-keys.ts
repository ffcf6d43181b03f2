/**
 * `object` with the `__proto__` key that protobuf-es could not hold put back
 * (see protoKeyPaths), so that normalisation drops or refuses it like any
 * other reserved key. Its value is lost; the key alone decides.
 */
export function withProtoKey<V>(
  object: Readonly<Record<string, V>>,
  path: string,
  protoKeys: ReadonlySet<string>,
  placeholder: V,
): Readonly<Record<string, V>> {
  if (!protoKeys.has(path)) return object;
  const copy = Object.assign(Object.create(null) as Record<string, V>, object);
  Object.defineProperty(copy, "__proto__", {
    value: placeholder,
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return copy;
}
