import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { ProjectSchema } from "../../../gen/platformapi/v1/admin_pb.js";
import { GetCurrentResponseSchema, type ProjectService } from "../../../gen/platformapi/v1/project_pb.js";
import type { Admin } from "../../admin/admin.js";
import { callerOf, projectOf } from "../calls/caller.js";

/** ProjectService: the calling key's own project, never one named in the request. */
export function createProjectService(admin: Admin): ServiceImpl<typeof ProjectService> {
  return {
    async getCurrent(_req, ctx) {
      const project = await admin.project(projectOf(ctx));
      return create(GetCurrentResponseSchema, {
        project: create(ProjectSchema, project),
        keyType: callerOf(ctx).type,
      });
    },
  };
}
