import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { ensureGoTool, goUnavailable, type GoTool } from "./go-tools.js";

const execFileAsync = promisify(execFile);

/** grpcurl, the gRPC client nobody here wrote, pinned; built from the Go module proxy like FerretDB. */
const GRPCURL: GoTool = { module: "github.com/fullstorydev/grpcurl/cmd/grpcurl", version: "v1.9.3" };

/** Why grpcurl cannot be had on this machine (no `go`), or undefined when it can. */
export async function grpcurlUnavailable(): Promise<string | undefined> {
  const why = await goUnavailable();
  return why && `${why}, so grpcurl cannot be built`;
}

/** The path of the grpcurl binary, built into the project's cache folder the first time (a minute or so). */
export function ensureGrpcurl(): Promise<string> {
  return ensureGoTool(GRPCURL);
}

export interface GrpcurlResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs `grpcurl -plaintext [flags] address [command]`, e.g. command ["list"] or ["grpc.health.v1.Health/Check"]. */
export async function runGrpcurl(
  binary: string,
  { address, command, flags = [] }: { address: string; command: string[]; flags?: string[] },
): Promise<GrpcurlResult> {
  try {
    const { stdout, stderr } = await execFileAsync(binary, ["-plaintext", ...flags, address, ...command], {
      timeout: 30_000,
    });
    return { exitCode: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout = "", stderr = "" } = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof code !== "number") throw error;
    return { exitCode: code, stdout, stderr };
  }
}
