import { execFileSync } from "node:child_process";
import { createRegistry, equals, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { file_buf_validate_validate } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { expect, it } from "vitest";

it("proto/buf/validate/validate.proto is the file whose code @bufbuild/protovalidate ships", () => {
  const path = "proto/buf/validate/validate.proto";
  const built = execFileSync("node_modules/.bin/buf", ["build", "--path", path, "--exclude-source-info", "-o", "-"]);
  const vendored = fromBinary(FileDescriptorSetSchema, built).file.find(
    (f) => f.name === "buf/validate/validate.proto",
  );
  expect(vendored).toBeDefined();
  // The rules' own options (their CEL and messages) are extensions: compare them too.
  const registry = createRegistry(file_buf_validate_validate);
  const same = equals(FileDescriptorProtoSchema, vendored!, file_buf_validate_validate.proto, {
    registry,
    extensions: true,
  });
  expect(same).toBe(true);
});
