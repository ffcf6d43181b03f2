import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { AdminService } from "../../gen/platformapi/v1/admin_pb.js";
import { ConfigService, ExperimentService } from "../../gen/platformapi/v1/config_pb.js";
import { EventService } from "../../gen/platformapi/v1/events_pb.js";
import { LaunchTokenService } from "../../gen/platformapi/v1/launch_pb.js";
import { PlayerService } from "../../gen/platformapi/v1/players_pb.js";
import { ProjectService } from "../../gen/platformapi/v1/project_pb.js";
import type { Capabilities } from "./calls/capabilities.js";
import { createAdminService } from "./services/admin-service.js";
import { createConfigService } from "./services/config-service.js";
import { createExperimentService } from "./services/experiment-service.js";
import { createEventService } from "./services/event-service.js";
import { createLaunchService } from "./services/launch-service.js";
import { createPlayerService } from "./services/player-service.js";
import { createProjectService } from "./services/project-service.js";

/** The API's services, in the order the /v1 routes and reflection list them. */
export const SERVICES: readonly DescService[] = [
  LaunchTokenService,
  PlayerService,
  EventService,
  ConfigService,
  ExperimentService,
  ProjectService,
  AdminService,
];

/** Registers one handler per proto service. */
export function registerServices(router: ConnectRouter, capabilities: Capabilities): void {
  const { admin, launch, players, events } = capabilities;
  router.service(LaunchTokenService, createLaunchService(launch));
  router.service(
    PlayerService,
    createPlayerService({ players, launchTokens: launch.tokens, keptEvents: events.keptEvents }),
  );
  router.service(ProjectService, createProjectService(admin));
  router.service(AdminService, createAdminService(admin, launch.keyring, events.parked));
  router.service(EventService, createEventService({ events: events.events }));
  router.service(ConfigService, createConfigService(capabilities.config));
  router.service(ExperimentService, createExperimentService(capabilities.config));
}
