import type { TestProject } from "vitest/node";
import { createLogger } from "../../../src/log.js";
import { startMongoJavaServer, type RunningMongoJavaServer } from "./mongo-java-server.js";

let server: RunningMongoJavaServer | undefined;

/** The concurrency suites' database server: mongo-java-server, whose updates are isolated per document. */
export async function setup(project: TestProject): Promise<void> {
  server = await startMongoJavaServer(createLogger("info"));
  project.provide("mongodbUri", server.uri);
}

export async function teardown(): Promise<void> {
  await server?.stop();
}
