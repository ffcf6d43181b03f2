import { setTimeout as delay } from "node:timers/promises";
import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";

export interface HealthOptions {
  /** Whether the service can do its work: the same check as /readyz. A rejection counts as not ready. */
  readiness: () => Promise<boolean>;
  /** The services a caller may ask about by name, beside "" (the server as a whole). */
  services: readonly DescService[];
  /** How often an open Watch checks readiness again. */
  watchIntervalMs?: number;
  /** Aborted when the server starts closing: open Watch calls then send NOT_SERVING and end, not holding the grace period. */
  closing?: AbortSignal;
}

/**
 * Serves the standard gRPC health service (grpc.health.v1.Health), so load
 * balancers and orchestrators probe this server as they probe any gRPC server.
 * Every service shares one readiness: they all stand or fall with the database.
 */
export function registerHealth(
  router: ConnectRouter,
  { readiness, services, watchIntervalMs = 5_000, closing = new AbortController().signal }: HealthOptions,
): void {
  const known = new Set(["", ...services.map((s) => s.typeName)]);
  const current = async (): Promise<ServingStatus> =>
    (await readiness().catch(() => false)) ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;

  router.service(Health, {
    async check({ service }) {
      if (!known.has(service)) throw new ConnectError(`unknown service ${service}`, Code.NotFound);
      return { status: await current() };
    },

    // Sends the status at once, then each change, until the caller goes or the server closes.
    async *watch({ service }, context) {
      const signal = AbortSignal.any([context.signal, closing]);
      let last: ServingStatus | undefined;
      while (!signal.aborted) {
        const status = known.has(service) ? await current() : ServingStatus.SERVICE_UNKNOWN;
        if (status !== last) yield { status };
        last = status;
        await delay(watchIntervalMs, undefined, { signal }).catch(() => undefined);
      }
      if (closing.aborted && last !== ServingStatus.NOT_SERVING) yield { status: ServingStatus.NOT_SERVING };
    },

    async list() {
      const status = await current();
      return { statuses: Object.fromEntries([...known].map((name) => [name, { status }])) };
    },
  });
}
