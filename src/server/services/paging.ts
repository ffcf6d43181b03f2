import { create } from "@bufbuild/protobuf";
import { PageInfoSchema } from "../../../gen/platformapi/v1/common_pb.js";

/** The page size of a listing whose request leaves it out. */
const DEFAULT_PAGE_SIZE = 50;

/** Pages start at 1; the proto refuses 0 and below, and absent means 1 (and the default page size). */
export function paging(req: { page?: number; pageSize?: number }): { page: number; pageSize: number } {
  return { page: req.page ?? 1, pageSize: req.pageSize ?? DEFAULT_PAGE_SIZE };
}

export function pageInfo(total: number, { page, pageSize }: { page: number; pageSize: number }) {
  return create(PageInfoSchema, { total, pages: Math.ceil(total / pageSize), page });
}
