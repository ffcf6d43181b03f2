import http from "node:http";
import { describe, expect, it } from "vitest";
import { ADMIN_KEY, startTestService } from "../support/service/service.js";

function post(agent: http.Agent, port: number, body?: string, headers: http.OutgoingHttpHeaders = {}) {
  const req = http.request({
    agent,
    port,
    host: "127.0.0.1",
    method: "POST",
    path: "/v1/admin/entitlements",
    headers: { "x-api-key": ADMIN_KEY, "content-type": "application/json", ...headers },
  });
  const response = new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
    req.on("response", (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection, body: text }));
    });
    req.on("error", reject);
  });
  if (body !== undefined) req.end(body);
  return { req, response };
}

describe("graceful shutdown", () => {
  it("lets a request in flight finish, closes its connection, then refuses new ones", async () => {
    const test = await startTestService();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const port = test.service.port;
    const body = JSON.stringify({ platform_user_id: "7f1c2a4e-0000-4000-8000-0000000000aa", game_id: 12 });

    // A first request makes sure the connection is established and served before shutdown begins.
    expect((await post(agent, port, body).response).status).toBe(200);

    // The server answers 100 Continue as it hands the request to the handler: from then on it is in flight.
    const inFlight = post(agent, port, undefined, { expect: "100-continue" });
    inFlight.req.write(body.slice(0, 10));
    await new Promise<void>((resolve) => inFlight.req.once("continue", () => resolve()));

    const closed = test.service.close(30_000);
    inFlight.req.end(body.slice(10));
    const answer = await inFlight.response;
    expect(answer.status).toBe(200);
    expect(answer.connection).toBe("close");
    await closed;

    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    agent.destroy();
    await test.database.db.dropDatabase();
    await test.database.close();
  });
});
